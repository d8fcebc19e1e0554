"""A write through the edge is held while its approval is pending, with progress saying so."""

from __future__ import annotations

import asyncio
import re

import pytest
from nats.aio.client import Client as NATS

from shared.nats.admin_service import admin_request
from tests.harness.stack import Stack
from tests.integration.mcp_edge.helpers import COUNTER_INC, LEGACY, MODERN, SUBJECTS, agent, connected, token

WAITING = re.compile(r"waiting for approval (\S+)")


@pytest.mark.parametrize(("mode", "decision"), [(LEGACY, "grant"), (MODERN, "deny")])
async def test_a_write_waits_for_its_approval(edge_stack: Stack, enc: NATS, mode: str, decision: str) -> None:
    agent_id = f"edge-approve-{decision}"
    await agent(enc, agent_id, [COUNTER_INC])
    created = await token(enc, agent_id)
    asked: asyncio.Queue[str] = asyncio.Queue()

    async def progress(done: float, total: float | None, message: str | None) -> None:
        found = WAITING.search(message or "")
        if found:
            asked.put_nowait(found.group(1))

    async with connected(edge_stack.endpoint(agent_id), created["token"], mode) as client:
        call = asyncio.create_task(client.call_tool(COUNTER_INC, {"key": agent_id}, progress_callback=progress))
        approval_id = await asyncio.wait_for(asked.get(), 20)
        assert not call.done()  # held while pending
        pending = await admin_request(enc, SUBJECTS, "approvals", "get", {"id": approval_id})
        assert pending["state"] == "pending" and pending["agent"] == agent_id and pending["tool"] == COUNTER_INC
        await admin_request(enc, SUBJECTS, "approvals", decision, {"id": approval_id, "note": "checked by qa"})
        result = await asyncio.wait_for(call, 20)
    if decision == "grant":
        assert not result.is_error, result
        assert result.structured_content == {"key": agent_id, "count": 1}
        used = await admin_request(enc, SUBJECTS, "approvals", "get", {"id": approval_id})
        assert used["state"] == "consumed"
    else:
        assert result.is_error
        text = result.content[0].text  # type: ignore[union-attr]
        assert "approval_denied" in text and approval_id in text and "checked by qa" in text, text
