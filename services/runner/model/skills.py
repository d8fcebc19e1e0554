"""An `llm` agent's skills for one run: read as stored now, put in the system message, recorded.

The step log gets one `skills` step naming `id@version` of every skill the run's model calls
were given. A run resumed after a skill changed gets the new text for the model calls still to
come, and a second step (`skills.a<attempt>`) records it; the first stays, since the earlier
calls were made with it. A skill the agent names that is no longer stored fails the run
(`unknown_skill`): the gateway refuses to delete a skill in use, so this is a skill removed
behind its back, and running without guidance the operator asked for would be a silent change.
"""

from __future__ import annotations

from typing import Protocol

from services.runner.context import RunContext
from services.runner.errors import StepFailed
from shared.clock import now_iso
from shared.contracts.agent import Agent
from shared.contracts.skill import Skill
from shared.contracts.task import TaskStep

STEP = "skills"


class SkillSource(Protocol):
    async def skill(self, skill_id: str) -> Skill | None: ...


async def load_skills(source: SkillSource | None, agent: Agent) -> list[Skill]:
    """The agent's skills in the order it names them; StepFailed naming any that is missing."""
    if not agent.skills:
        return []
    if source is None:
        raise StepFailed("unknown_skill", f"agent {agent.id} names skills and this runner has no skill store")
    found = [(name, await source.skill(name)) for name in agent.skills]
    missing = [name for name, skill in found if skill is None]
    if missing:
        raise StepFailed("unknown_skill", f"agent {agent.id} names skill(s) that no longer exist: "
                         f"{', '.join(missing)} (apply them again, or remove them from the agent)")
    return [skill for _, skill in found if skill is not None]


def guidance(skills: list[Skill]) -> str | None:
    """The system-message section for the skills (None without any)."""
    if not skills:
        return None
    parts = ["Skills — the operator's guidance on how to work (advice, not permissions):"]
    for skill in skills:
        about = f" (about {', '.join(skill.tools)})" if skill.tools else ""
        parts.append(f"## {skill.id}{about}\n{skill.text.strip()}")
    return "\n\n".join(parts)


def refs(skills: list[Skill]) -> list[dict[str, object]]:
    return [{"id": s.id, "version": s.version, "tools": list(s.tools)} for s in skills]


def skills_step(step_id: str, skills: list[Skill]) -> TaskStep:
    now = now_iso()
    return TaskStep(id=step_id, kind="skills", name=", ".join(s.ref for s in skills), status="finished",
                    started_at=now, finished_at=now, classification="ok", structured=refs(skills))


def step_to_record(logged: list[TaskStep], skills: list[Skill], *, prefix: str, attempt: int) -> TaskStep | None:
    """The step naming the versions this attempt gives the model, or None when the log already
    names exactly these (a resumed run with unchanged skills) or there are none."""
    if not skills:
        return None
    step_id = f"{prefix}{STEP}"
    wanted = refs(skills)
    earlier = [s for s in logged if s.kind == "skills" and (s.id == step_id or s.id.startswith(f"{step_id}.a"))]
    if earlier and earlier[-1].structured == wanted:
        return None
    return skills_step(f"{step_id}.a{attempt}" if earlier else step_id, skills)


def record(ctx: RunContext, skills: list[Skill], *, prefix: str = "") -> None:
    step = step_to_record(ctx.handle.steps(), skills, prefix=prefix, attempt=ctx.attempt)
    if step is not None:
        ctx.handle.stage(step)  # written with the run's next durable change, like the model turns
