"""Re-import: a DRAFT is updated in place (version bumped only on change); other states are left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from services.mcp_gateway.systems.merge import merge_draft, plan_merge
from services.mcp_gateway.systems.openapi_import import import_operations
from services.mcp_gateway.systems.openapi_load import load_openapi
from shared.contracts.tooldef import ReviewNote, ToolDefinition

PETSTORE = Path(__file__).resolve().parents[3] / "fixtures" / "openapi" / "petstore-3.0.json"


def imported(now: str = "2026-09-09T00:00:00+00:00", by: str = "alice") -> ToolDefinition:
    result = import_operations(load_openapi(str(PETSTORE)), system="petstore", package="petstore", now=now, by=by)
    return next(t for t in result.tools if t.name == "petstore.getPetById")


def test_a_new_tool_is_created_as_imported() -> None:
    fresh = imported()
    assert merge_draft(None, fresh) is fresh
    assert plan_merge(None, fresh).action == "create"


def test_the_same_import_leaves_a_draft_unchanged() -> None:
    stored = imported().model_copy(update={"notes": (ReviewNote(at="t", by="bob", action="comment"),)})
    again = imported(now="2026-09-10T00:00:00+00:00", by="carol")
    decision = plan_merge(stored, again)
    assert decision.action == "unchanged" and decision.tool is stored
    assert merge_draft(stored, again) is stored  # same version, same author: nothing to write


def test_a_changed_import_updates_the_draft_and_bumps_its_version() -> None:
    stored = imported().model_copy(update={"version": 3, "capability": "pet.read", "preferred": True,
                                           "notes": (ReviewNote(at="t", by="bob", action="comment"),)})
    changed = imported(now="2026-09-10T00:00:00+00:00", by="carol").model_copy(
        update={"description": "Find one pet", "missing": ()})
    merged = merge_draft(stored, changed)
    assert merged is not None
    assert (merged.state, merged.version, merged.description, merged.missing) == ("DRAFT", 4, "Find one pet", ())
    assert (merged.changed_at, merged.changed_by) == ("2026-09-10T00:00:00+00:00", "carol")
    assert (merged.capability, merged.preferred, merged.notes) == (stored.capability, True, stored.notes)
    assert plan_merge(stored, changed).reason == "updated to version 4: description, missing"


@pytest.mark.parametrize("state", ["REVIEWING", "PUBLISHED", "DEPRECATED"])
def test_a_tool_beyond_draft_is_left_as_is(state: str) -> None:
    stored = imported().model_copy(update={"state": state})
    changed = imported().model_copy(update={"description": "changed"})
    assert merge_draft(stored, changed) is None
    decision = plan_merge(stored, changed)
    assert (decision.action, decision.tool, decision.reason) == ("kept", None, f"left as is: {state}")


def test_a_tool_of_another_system_or_written_by_hand_is_left_as_is() -> None:
    other_system = imported().model_copy(update={"system": "other"})
    assert merge_draft(other_system, imported()) is None
    manual = imported().model_copy(update={"source": "manual"})
    assert plan_merge(manual, imported()).reason == "left as is: not imported from system petstore's OpenAPI"
