"""mcp-edge built by `build_edge` in this process, on the edge stack's nats-server (its gateway and
echo app are real): an agent's endpoint answers `initialize` and `tools/list` with a bearer token,
and after the edge stopped neither its HTTP port nor its own micro service answers."""

from __future__ import annotations

import httpx
import pytest
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError

from services.mcp_edge.config import EdgeSettings
from services.mcp_edge.wiring import EdgeSetup, build_edge
from shared.wiring import Connections
from tests.harness.stack import Stack
from tests.integration.mcp_edge.helpers import ECHO_TOOL, LEGACY, SUBJECTS, agent, connected, token


async def test_the_edge_is_built_in_process_serves_mcp_and_stops_whole(edge_stack: Stack, enc: NATS) -> None:
    edge = await build_edge(EdgeSetup(SUBJECTS, EdgeSettings(port=0, refresh_seconds=0.5)), Connections(enc))
    assert [type(part).__name__ for part in edge.order] == [
        "ListChanges", "KvMirror", "KvMirror", "StartedBy", "ClientReplies", "ManagerRunning", "EdgeHttpServer"]
    await agent(enc, "edge-wired", [ECHO_TOOL])
    created = await token(enc, "edge-wired", name="wired")
    async with edge:
        url = f"http://127.0.0.1:{edge.parts.http.port}/agents/edge-wired/mcp"
        # LEGACY: the 2025-11-25 era, `initialize` first, then `tools/list`, with the bearer token
        async with connected(url, created["token"], LEGACY) as client:
            assert [tool.name for tool in (await client.list_tools()).tools] == [ECHO_TOOL]
        micro_service = edge.parts.admin.require_started()
        ping = f"$SRV.PING.aurora-mcp-edge.{micro_service.id}"  # this instance's, not the stack's edges'
        assert b"aurora-mcp-edge" in (await enc.request(ping, b"", timeout=2)).data
    assert not any(part.started for part in edge.order)
    with pytest.raises(httpx.ConnectError):
        async with httpx.AsyncClient() as http:
            await http.post(url, json={}, timeout=5)
    with pytest.raises(NoRespondersError):
        await enc.request(ping, b"", timeout=2)
