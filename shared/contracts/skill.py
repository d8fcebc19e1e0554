"""The skill spec (`kind: Skill`): reusable guidance an `llm` agent is given, kept with its versions.

A skill is advice to the model ("confirm the device first, then read its points and their
units"), never a permission: what must not be skipped is enforced by the gateway and the task
state machine. Agents name skills by id; the runner puts the current text of each into the
agent's system message and records `id@version` in the task's step log.

The gateway keeps the version: the first apply stores version 1, each apply that changes the
text, tools or description stores the next one, and the version it replaced goes into
`history` (the last `HISTORY_KEPT`), so `aurora get skills ID -o yaml` shows what changed and
when. A document may carry `version` — the version it was edited from: when the stored skill
has moved on since, the apply is refused instead of silently overwriting someone's change.
`updated_at` and `history` are the gateway's: a document may carry them (as `get -o yaml`
prints them) and they are not taken from it.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from shared.contracts.resource import ResourceId, ResourceModel
from shared.errors import AuroraError

HISTORY_KEPT = 10
SKILL_TEXT_LIMIT = 8000  # characters: a skill is guidance, not a manual (every run sends it)
ToolName = Annotated[str, Field(min_length=1, max_length=256)]


class SkillVersion(ResourceModel):
    """A version a later apply replaced."""

    version: Annotated[int, Field(ge=1)]
    at: str
    text: str
    tools: tuple[ToolName, ...] = ()
    description: str = ""


class Skill(ResourceModel):
    kind: Literal["Skill"] = "Skill"
    id: ResourceId
    text: Annotated[str, Field(min_length=1, max_length=SKILL_TEXT_LIMIT)]
    tools: tuple[ToolName, ...] = ()  # the tools this guidance is about (for people; not a binding)
    description: Annotated[str, Field(max_length=2000)] = ""
    version: Annotated[int, Field(ge=1)] | None = None
    updated_at: str | None = None
    history: tuple[SkillVersion, ...] = ()

    @property
    def ref(self) -> str:
        """`id@version`, as agents show it and the step log records it."""
        return f"{self.id}@{self.version or '?'}"


class SkillVersionConflict(AuroraError):
    """A document edited from an older version than the stored one."""


def _content(skill: Skill) -> tuple[str, tuple[str, ...], str]:
    return skill.text, skill.tools, skill.description


def apply_skill(stored: Skill | None, document: Skill, *, now: str) -> tuple[str, Skill]:
    """("created" | "updated" | "unchanged", the skill to store). Pure: the caller writes it with
    a compare-and-set on the entry it read `stored` from."""
    if stored is None:
        if document.version not in (None, 1):
            raise SkillVersionConflict(
                f"skill {document.id!r} does not exist, so there is no version {document.version} to edit "
                "(leave version out, or 1)")
        return "created", document.model_copy(update={"version": 1, "updated_at": now, "history": ()})
    if _content(stored) == _content(document):
        return "unchanged", stored
    current = stored.version or 1
    if document.version is not None and document.version != current:
        raise SkillVersionConflict(
            f"skill {document.id!r} is at version {current}, and this document was edited from version "
            f"{document.version}: get it again (aurora get skills {document.id} -o yaml), redo the change, apply")
    replaced = SkillVersion(version=current, at=stored.updated_at or "", text=stored.text, tools=stored.tools,
                            description=stored.description)
    return "updated", document.model_copy(update={
        "version": current + 1, "updated_at": now, "history": (*stored.history, replaced)[-HISTORY_KEPT:]})
