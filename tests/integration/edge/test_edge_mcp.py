"""An agent's MCP endpoint with the official SDK client, in both protocol eras."""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
import pytest
from nats.aio.client import Client as NATS

from shared.admin import admin_request
from tests.harness.processes import logged
from tests.harness.waiting import poll
from tests.integration.edge.conftest import EdgeStack
from tests.integration.edge.helpers import (
    COUNTER_GET,
    COUNTER_INC,
    ECHO_TOOL,
    FAIL,
    LEGACY,
    MODERN,
    SUBJECTS,
    agent,
    audit_records,
    connected,
    token,
)


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
async def test_lists_the_available_set_and_calls_through_the_gateway(
        edge_stack: EdgeStack, enc: NATS, mode: str) -> None:
    agent_id = f"edge-list-{mode.replace('-', '')}"
    await agent(enc, agent_id, [ECHO_TOOL, COUNTER_GET, "test.echo.no_such_tool"])
    created = await token(enc, agent_id, name="claude")
    async with connected(edge_stack.endpoint(agent_id), created["token"], mode) as client:
        listed = await client.list_tools()
        assert sorted(t.name for t in listed.tools) == [COUNTER_GET, ECHO_TOOL]
        result = await client.call_tool(ECHO_TOOL, {"value": {"n": 1, "ok": True, "list": [1, "2"]}})
        assert not result.is_error, result
        assert result.structured_content == {"value": {"n": 1, "ok": True, "list": [1, "2"]}}
        # a bound tool the agent does not have is refused by the gateway, as a tool error
        refused = await client.call_tool(COUNTER_INC, {"key": "x"})
        assert refused.is_error and "not_bound" in refused.content[0].text  # type: ignore[union-attr]


async def test_the_audit_names_the_external_caller(edge_stack: EdgeStack, enc: NATS) -> None:
    await agent(enc, "edge-audit", [ECHO_TOOL])
    created = await token(enc, "edge-audit", name="audited-client")
    async with connected(edge_stack.endpoint("edge-audit"), created["token"], LEGACY) as client:
        result = await client.call_tool(ECHO_TOOL, {"value": "audited"})
    assert not result.is_error

    async def mine() -> list[dict[str, Any]]:
        return [r for r in await audit_records(enc) if r.get("agent") == "edge-audit"]

    records = await poll(mine, what="the edge call's audit record")
    assert records[0]["actor"] == f"token:{created['id']}" and records[0]["status"] == "ok"
    assert records[0]["caller"] == "agent:edge-audit" and records[0]["run_id"] is None


async def test_retiring_a_tool_pushes_list_changed(edge_stack: EdgeStack, enc: NATS) -> None:
    await agent(enc, "edge-changes", [ECHO_TOOL, FAIL])
    created = await token(enc, "edge-changes")
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with connected(edge_stack.endpoint("edge-changes"), created["token"], LEGACY,
                         on_message=on_message) as client:
        assert FAIL in [t.name for t in (await client.list_tools()).tools]
        await logged(edge_stack.processes["edge-0"], '"msg": "stream open", "agent": "edge-changes"')
        # Retired for good in this stack: no other test binds it.
        await admin_request(enc, SUBJECTS, "tools", "deprecate", {"name": FAIL, "note": "edge test"})
        await asyncio.wait_for(changed.wait(), 20)
        assert FAIL not in [t.name for t in (await client.list_tools()).tools]
