"""An agent's MCP endpoint with the official SDK client, in both protocol eras."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import mcp_types as types
import pytest
from nats.aio.client import Client as NATS

from shared.clock import now_iso
from shared.contracts.envelope import Header, Source
from shared.contracts.toolcall import (
    METHOD_CALL,
    ToolActor,
    ToolCallContext,
    ToolCallEnvelope,
    ToolCallRequest,
    decode_result,
    encode,
)
from shared.nats.admin_service import admin_request
from tests.harness.processes import logged
from tests.harness.stack import Stack
from tests.harness.waiting import poll
from tests.integration.mcp_edge.helpers import (
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
        edge_stack: Stack, enc: NATS, mode: str) -> None:
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


async def test_the_audit_names_the_external_caller(edge_stack: Stack, enc: NATS) -> None:
    await agent(enc, "edge-audit", [ECHO_TOOL])
    created = await token(enc, "edge-audit", name="audited-client")
    async with connected(edge_stack.endpoint("edge-audit"), created["token"], LEGACY) as client:
        result = await client.call_tool(ECHO_TOOL, {"value": "audited"})
    assert not result.is_error

    async def mine() -> list[dict[str, Any]]:
        return [r for r in await audit_records(enc) if r.get("agent") == "edge-audit"]

    records = await poll(mine, what="the edge call's audit record")
    assert records[0]["actor"] == f"token:{created['id']}" and records[0]["status"] == "ok"
    # The caller is the bearer token (for its agent): `edge:<token id>`.
    assert records[0]["caller"] == f"edge:{created['id']}" and records[0]["run_id"] is None


async def test_retiring_a_tool_pushes_list_changed(edge_stack: Stack, enc: NATS) -> None:
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


async def test_an_edge_call_must_name_its_agent_caller_and_task(edge_stack: Stack, enc: NATS) -> None:
    """On the edge subject the gateway trusts the context's agent and caller (only mcp-edge may
    publish there), so a call that leaves them out, or claims a run, is refused as malformed."""
    await agent(enc, "edge-malformed", [ECHO_TOOL])
    cases = {
        "no caller": ToolCallContext(agent="edge-malformed", task_id="edge-t1"),
        "no agent": ToolCallContext(task_id="edge-t2", actor=ToolActor(id="token:x", kind="api")),
        "a run": ToolCallContext(agent="edge-malformed", task_id="edge-t3", run_id="r-1",
                                 actor=ToolActor(id="token:x", kind="api")),
    }
    for case, context in cases.items():
        envelope = ToolCallEnvelope(
            header=Header(method=METHOD_CALL, message_id=str(uuid.uuid4()), timestamp=now_iso(),
                          source=Source(app="aurora.edge")),
            payload=ToolCallRequest(tool=ECHO_TOOL, arguments={"value": 1}, context=context))
        reply = decode_result((await enc.request(SUBJECTS.edge_tool_call, encode(envelope), timeout=10)).data)
        assert reply.payload.status == "denied", case
        assert reply.payload.error is not None and reply.payload.error.code == "invalid_request", case


async def test_a_stateless_client_listens_for_list_changes(edge_stack: Stack, enc: NATS) -> None:
    await agent(enc, "edge-listen", [ECHO_TOOL, COUNTER_GET])
    created = await token(enc, "edge-listen")
    async with connected(edge_stack.endpoint("edge-listen"), created["token"], MODERN) as client:
        assert COUNTER_GET in [t.name for t in (await client.list_tools()).tools]
        async with client.listen(tools_list_changed=True, prompts_list_changed=True) as subscription:
            assert subscription.honored.tools_list_changed is True
            assert not subscription.honored.prompts_list_changed  # the edge serves no prompts
            await agent(enc, "edge-listen", [ECHO_TOOL])  # the agent loses a tool
            event = await asyncio.wait_for(subscription.__anext__(), 20)
        assert type(event).__name__ == "ToolsListChanged"
        assert [t.name for t in (await client.list_tools()).tools] == [ECHO_TOOL]
