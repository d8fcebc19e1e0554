"""Lifecycle moves and the deterministic checks before publishing."""

from __future__ import annotations

import pytest

from services.mcp_gateway.pool.lifecycle import LifecycleError, publish_problems, transition
from shared.contracts.system import System
from shared.contracts.tooldef import HttpExecution, HttpParam, McpExecution, ToolDefinition

HTTP_SYSTEM = System(name="crm", base_url="http://crm.local")
MCP_SYSTEM = System(name="im.polaris.qq", type="mcp")


def http_tool(**changes: object) -> ToolDefinition:
    base = ToolDefinition(
        name="crm.get_customer",
        system="crm",
        description="Look up a customer by id.",
        input_schema={"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]},
        execution=HttpExecution(method="GET", path="/customers/{id}",
                                params=(HttpParam(name="id", location="path", required=True),)),
        side_effect="read",
    )
    return base.model_copy(update=changes)


def test_a_complete_draft_publishes_after_review_and_records_who_and_why() -> None:
    reviewing = transition(http_tool(), "review", system=HTTP_SYSTEM, by="bob", note="looking",
                           now="2026-11-30T09:00:00+00:00")
    published = transition(reviewing, "publish", system=HTTP_SYSTEM, by="alice", note="checked units",
                           now="2026-11-30T10:00:00+00:00")
    assert published.state == "PUBLISHED"
    assert published.changed_by == "alice"
    assert published.notes[-1].action == "publish" and published.notes[-1].note == "checked units"


def test_a_draft_is_reviewed_before_it_is_published() -> None:
    with pytest.raises(LifecycleError) as refused:
        transition(http_tool(), "publish", system=HTTP_SYSTEM, by="alice", note="", now="2026-11-30T10:00:00+00:00")
    assert refused.value.reasons == ["the tool is DRAFT: publish applies to REVIEWING only"]


def test_a_refused_publish_names_every_reason_at_once() -> None:
    broken = http_tool(
        description="",
        input_schema={"type": "object", "properties": {"id": {"type": "integer"}, "q": {"type": "strin"}},
                      "required": ["id", "q"]},
        execution=HttpExecution(method="GET", path="customers/{cid}",
                                params=(HttpParam(name="ghost", location="query"),)),
    )
    with pytest.raises(LifecycleError) as caught:
        transition(broken, "publish", system=HTTP_SYSTEM, by="bob", note="", now="t")
    reasons = "\n".join(caught.value.reasons)
    assert "not a valid JSON Schema" in reasons
    assert "required parameter 'id' is not mapped" in reasons
    assert "required parameter 'q' is not mapped" in reasons
    assert "'ghost', which the input schema does not define" in reasons
    assert "must start with '/'" in reasons
    assert "{cid} has no path parameter" in reasons
    assert "description is empty" in reasons


def test_an_unregistered_system_blocks_publishing() -> None:
    assert any("not registered" in p for p in publish_problems(http_tool(), None))


@pytest.mark.parametrize(
    ("state", "action", "allowed"),
    [("DRAFT", "review", True), ("REVIEWING", "publish", True), ("PUBLISHED", "deprecate", True),
     ("DEPRECATED", "publish", False), ("PUBLISHED", "review", False), ("DEPRECATED", "draft", True)],
)
def test_only_the_defined_moves_exist(state: str, action: str, allowed: bool) -> None:
    tool = ToolDefinition(name="im.polaris.qq.send", system="im.polaris.qq", description="send",
                          execution=McpExecution(app="im.polaris.qq", tool="send"), state=state)  # type: ignore[arg-type]
    if allowed:
        assert transition(tool, action, system=MCP_SYSTEM, by="x", note="", now="t").state != state
    else:
        with pytest.raises(LifecycleError, match=f"the tool is {state}"):
            transition(tool, action, system=MCP_SYSTEM, by="x", note="", now="t")
