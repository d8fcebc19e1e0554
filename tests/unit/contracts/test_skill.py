"""`kind: Skill` documents, the gateway's versioning of them, and agents naming them by id."""

from __future__ import annotations

import pytest

from shared.contracts.agent import Agent
from shared.contracts.resource import ResourceError, parse_resource
from shared.contracts.skill import HISTORY_KEPT, Skill, SkillVersionConflict, apply_skill

T0, T1, T2 = "2026-12-01T10:00:00Z", "2026-12-01T11:00:00Z", "2026-12-01T12:00:00Z"


def skill(text: str, **extra: object) -> Skill:
    return parse_resource(Skill, {"kind": "Skill", "id": "units", "text": text, **extra})


def test_the_first_apply_is_version_1_and_the_same_text_again_is_unchanged() -> None:
    outcome, stored = apply_skill(None, skill("read units"), now=T0)
    assert (outcome, stored.version, stored.updated_at, stored.history) == ("created", 1, T0, ())
    assert apply_skill(stored, skill("read units"), now=T1) == ("unchanged", stored)
    # what `aurora get -o yaml` prints applies back unchanged
    assert apply_skill(stored, stored, now=T1)[0] == "unchanged"


def test_a_changed_text_or_tools_is_the_next_version_and_the_old_one_goes_to_the_history() -> None:
    _, v1 = apply_skill(None, skill("read units"), now=T0)
    outcome, v2 = apply_skill(v1, skill("read units first"), now=T1)
    assert (outcome, v2.version, v2.text, v2.updated_at) == ("updated", 2, "read units first", T1)
    assert [(h.version, h.at, h.text) for h in v2.history] == [(1, T0, "read units")]
    _, v3 = apply_skill(v2, skill("read units first", tools=["a.b"]), now=T2)
    assert v3.version == 3 and [h.version for h in v3.history] == [1, 2]


def test_the_history_keeps_the_last_versions_only() -> None:
    _, stored = apply_skill(None, skill("v1"), now=T0)
    for n in range(2, HISTORY_KEPT + 5):
        _, stored = apply_skill(stored, skill(f"v{n}"), now=T1)
    assert len(stored.history) == HISTORY_KEPT and stored.history[-1].version == stored.version - 1  # type: ignore[operator]


def test_a_document_edited_from_an_older_version_is_refused() -> None:
    _, v1 = apply_skill(None, skill("one"), now=T0)
    _, v2 = apply_skill(v1, skill("two", version=1), now=T1)
    with pytest.raises(SkillVersionConflict, match=r"is at version 2.*edited from version 1"):
        apply_skill(v2, skill("three", version=1), now=T2)
    assert apply_skill(v2, skill("three", version=2), now=T2)[1].version == 3
    with pytest.raises(SkillVersionConflict, match="does not exist"):
        apply_skill(None, skill("new", version=4), now=T0)


def test_a_skill_needs_text_and_an_id() -> None:
    with pytest.raises(ResourceError) as bad:
        parse_resource(Skill, {"kind": "Skill", "id": "has space", "text": ""})
    fields = {field for field, _ in bad.value.problems}
    assert fields == {"id", "text"}


def test_agents_name_skills_by_id_and_an_inline_sentence_says_where_it_goes() -> None:
    agent = parse_resource(Agent, {"kind": "Agent", "id": "a", "agent_kind": "llm", "skills": ["units", "triage-2"]})
    assert agent.skills == ("units", "triage-2")
    with pytest.raises(ResourceError) as bad:
        parse_resource(Agent, {"kind": "Agent", "id": "a", "agent_kind": "llm",
                               "skills": ["Confirm the device first."]})
    [(field, reason)] = bad.value.problems
    assert field.startswith("skills") and "not a skill id" in reason and "Skill" in reason
    with pytest.raises(ResourceError, match="named twice"):
        parse_resource(Agent, {"kind": "Agent", "id": "a", "agent_kind": "llm", "skills": ["x", "x"]})


def test_what_get_prints_can_be_edited_and_applied_back() -> None:
    _, v1 = apply_skill(None, skill("one"), now=T0)
    _, v2 = apply_skill(v1, skill("two"), now=T1)
    printed = v2.model_dump(mode="json")  # `aurora get skills units -o yaml`, then edited
    edited = parse_resource(Skill, {**printed, "text": "three", "updated_at": "forged", "history": []})
    outcome, v3 = apply_skill(v2, edited, now=T2)
    assert (outcome, v3.version, v3.updated_at) == ("updated", 3, T2)
    assert [h.text for h in v3.history] == ["one", "two"]  # the gateway's history, not the document's
