"""The runner's part of skills: loading an agent's skills, the system-message section, and the
step that records which versions a run was given."""

from __future__ import annotations

import pytest

from services.runner.errors import StepFailed
from services.runner.model.skills import guidance, load_skills, step_to_record
from shared.contracts.agent import Agent
from shared.contracts.skill import Skill


class Stored:
    """Skills as a store holds them (the runner reads them by id)."""

    def __init__(self, *skills: Skill) -> None:
        self._skills = {s.id: s for s in skills}

    async def skill(self, skill_id: str) -> Skill | None:
        return self._skills.get(skill_id)


UNITS = Skill(id="units", text="Name the unit of every value.", version=3, tools=("plant.read_point",))
TRIAGE = Skill(id="triage", text="Confirm the device first.", version=1)


def agent(*skills: str) -> Agent:
    return Agent(id="a", agent_kind="llm", skills=skills)


async def test_skills_load_in_the_order_the_agent_names_them() -> None:
    assert await load_skills(Stored(UNITS, TRIAGE), agent("triage", "units")) == [TRIAGE, UNITS]
    assert await load_skills(None, agent()) == []


async def test_a_skill_that_is_gone_fails_the_run_naming_it() -> None:
    with pytest.raises(StepFailed) as failed:
        await load_skills(Stored(UNITS), agent("units", "triage"))
    assert failed.value.code == "unknown_skill" and "triage" in str(failed.value) and "units" not in str(failed.value)


def test_the_guidance_carries_each_text_and_what_it_is_about() -> None:
    text = guidance([TRIAGE, UNITS])
    assert text is not None and "advice, not permissions" in text
    assert text.index("Confirm the device first.") < text.index("Name the unit of every value.")
    assert "## units (about plant.read_point)" in text
    assert guidance([]) is None


def test_the_step_names_the_versions_and_a_resume_with_a_new_version_adds_one() -> None:
    first = step_to_record([], [TRIAGE, UNITS], prefix="", attempt=1)
    assert first is not None and first.id == "skills" and first.name == "triage@1, units@3"
    assert first.structured == [{"id": "triage", "version": 1, "tools": []},
                                {"id": "units", "version": 3, "tools": ["plant.read_point"]}]
    assert step_to_record([first], [TRIAGE, UNITS], prefix="", attempt=2) is None  # resumed, nothing changed
    newer = UNITS.model_copy(update={"version": 4})
    again = step_to_record([first], [TRIAGE, newer], prefix="", attempt=2)
    assert again is not None and again.id == "skills.a2" and again.name == "triage@1, units@4"
    assert step_to_record([first], [], prefix="", attempt=2) is None
    staged = step_to_record([first], [TRIAGE], prefix="ai.", attempt=1)  # a pipeline's AI stage
    assert staged is not None and staged.id == "ai.skills"
