"""`tools.edit`'s pure parts: a reviewer's wording into a draft (by hand or from the model's
suggestion), and how that wording survives the app's next tool list and an OpenAPI re-import."""

from __future__ import annotations

import pytest

from services.mcp_gateway.pool.discovered import contract
from services.mcp_gateway.pool.lifecycle import publish_problems
from services.mcp_gateway.pool.wording import EditError, EditRequest, apply_wording, edit_tool, with_unit
from services.mcp_gateway.systems.merge import plan_merge
from shared.contracts.suggestion import ToolSuggestion
from shared.contracts.system import System
from shared.contracts.tooldef import HttpExecution, HttpParam, McpExecution, ToolDefinition

SCHEMA = {"type": "object", "properties": {"point": {"type": "string"}, "window": {"type": "integer",
                                                                                    "description": "window"}},
          "required": ["point"]}
DRAFT = ToolDefinition(name="plant.read_point", system="plant", description="", input_schema=SCHEMA, version=3,
                       execution=McpExecution(app="plant", tool="read_point"), state="REVIEWING", source="mcp")
SUGGESTION = ToolSuggestion(model="m1", description="Read one point's latest value.",
                            parameters={"point": "The point's tag, e.g. T-101."}, units={"window": "s"},
                            for_version=3, by="amy", at="t0")


def edit(tool: ToolDefinition, **request: object) -> ToolDefinition:
    return edit_tool(tool, EditRequest(**request), by="opal", now="t1")  # type: ignore[arg-type]


def test_an_edit_by_hand_changes_only_wording_bumps_the_version_and_says_who() -> None:
    edited = edit(DRAFT, description=" Read a point. ", parameters={"point": "The tag"}, units={"window": "min"},
                  note="checked with the plant team")
    assert edited.description == "Read a point."
    assert edited.input_schema["properties"] == {"point": {"type": "string", "description": "The tag"},
                                                 "window": {"type": "integer", "description": "window (unit: min)"}}
    assert edited.input_schema["required"] == ["point"] and edited.state == "REVIEWING"
    assert (edited.version, edited.changed_by, edited.edited and edited.edited.version) == (4, "opal", 4)
    assert edited.notes[-1].action == "edited" and edited.notes[-1].by == "opal"
    assert edited.notes[-1].note == "edited by opal: description, point, window; checked with the plant team"
    assert edited.suggestion is None and edited.execution == DRAFT.execution


def test_taking_the_suggestion_records_the_model_and_clears_it() -> None:
    edited = edit(DRAFT.model_copy(update={"suggestion": SUGGESTION}), from_suggestion=True)
    assert edited.description == SUGGESTION.description
    assert edited.input_schema["properties"]["point"]["description"] == "The point's tag, e.g. T-101."
    assert edited.input_schema["properties"]["window"]["description"] == "window (unit: s)"
    assert edited.suggestion is None and edited.edited is not None and edited.edited.from_model == "m1"
    assert "from suggestion of model m1" in edited.notes[-1].note
    # only some parts, and a flag wins over the suggestion
    partly = edit(DRAFT.model_copy(update={"suggestion": SUGGESTION}), from_suggestion=True, only=("params",),
                  parameters={"point": "Mine."})
    assert partly.description == "" and partly.input_schema["properties"]["point"]["description"] == "Mine."
    assert partly.input_schema["properties"]["window"]["description"] == "window"


def test_bad_edits_are_refused_naming_what_to_fix() -> None:
    with pytest.raises(EditError, match="no parameter 'nope'; its parameters: point, window") as unknown:
        edit(DRAFT, parameters={"nope": "x"})
    assert unknown.value.code == "unknown_parameter"
    with pytest.raises(EditError, match=r"aurora tools draft plant\.read_point first"):
        edit(DRAFT.model_copy(update={"state": "PUBLISHED"}), description="x")
    with pytest.raises(EditError, match=r"aurora tools suggest plant\.read_point first"):
        edit(DRAFT, from_suggestion=True)
    with pytest.raises(EditError, match=r"made for version 2 .* now at version 3"):
        edit(DRAFT.model_copy(update={"suggestion": SUGGESTION.model_copy(update={"for_version": 2})}),
             from_suggestion=True)
    with pytest.raises(EditError, match="empty wording for the description, point"):
        edit(DRAFT, description=" ", parameters={"point": ""})
    with pytest.raises(EditError, match="changes nothing"):
        edit(DRAFT, parameters={"window": "window"})
    with pytest.raises(EditError, match="--only takes"):
        edit(DRAFT.model_copy(update={"suggestion": SUGGESTION}), from_suggestion=True, only=("names",))


def test_a_unit_replaces_the_one_written_before() -> None:
    assert with_unit("Window (unit: s)", "min") == "Window (unit: min)"
    assert with_unit("", "ms") == "(unit: ms)"


def test_filling_the_description_is_what_makes_a_draft_publishable() -> None:
    system = System(name="plant", type="mcp")
    assert publish_problems(DRAFT, system) == ["description is empty: the model needs to know what the tool does"]
    assert publish_problems(edit(DRAFT, description="Read a point."), system) == []


def test_the_apps_next_tool_list_keeps_the_reviewers_wording() -> None:
    edited = edit(DRAFT, description="Read a point.", units={"window": "s"})
    relisted = apply_wording(DRAFT, edited.edited)  # the app lists the same tool again
    assert contract(relisted) == contract(edited)  # so the sync sees no change
    # the app changes its schema: the change shows, the reviewer's words stay on what still exists
    changed = DRAFT.model_copy(update={"input_schema": {"type": "object", "properties": {
        "window": {"type": "number", "description": "w"}, "extra": {"type": "string"}}}})
    again = apply_wording(changed, edited.edited)
    assert contract(again) != contract(edited) and again.description == "Read a point."
    assert again.input_schema["properties"] == {"window": {"type": "number", "description": "window (unit: s)"},
                                                "extra": {"type": "string"}}


def test_a_reimport_keeps_the_reviewers_wording_and_drops_what_they_supplied() -> None:
    imported = ToolDefinition(
        name="shop.get_order", system="shop", description="", source="openapi", state="DRAFT",
        input_schema={"type": "object", "properties": {"id": {"type": "string"}, "limit": {"type": "integer"}}},
        execution=HttpExecution(method="GET", path="/orders", params=(HttpParam(name="id", location="query"),)),
        missing=("description: the operation has no summary or description", "input `id` (query): no description",
                 "input `limit` (query): no description; it is a number: give its unit"))
    edited = edit(imported, description="Get one order.", parameters={"id": "The order's id."})
    assert edited.missing == ("input `limit` (query): no description; it is a number: give its unit",)
    assert plan_merge(edited, imported).action == "unchanged"  # the same document again
    newer = imported.model_copy(update={"output_schema": {"type": "object"}})
    decision = plan_merge(edited, newer)
    assert decision.action == "update" and decision.tool is not None
    assert decision.tool.description == "Get one order." and decision.tool.output_schema == {"type": "object"}
    assert decision.tool.input_schema["properties"]["id"]["description"] == "The order's id."
