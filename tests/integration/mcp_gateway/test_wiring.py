"""The gateway built by `build_gateway` in this process, over a real nats-server and a real MCP
app (the notes app over Streamable HTTP): it answers a tool call once started; stopped, nothing
of it answers, every part has stopped, and they stopped in the reverse of the start order. What
that order means: a call in flight when the gateway stops is answered before what it uses stops."""

from __future__ import annotations

import asyncio

import pytest
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError

from services.mcp_gateway.config import GatewaySettings
from services.mcp_gateway.wiring import GatewayAssembly, GatewaySetup, build_gateway
from shared.config.appconfig import AppsConfig, parse_apps_config
from shared.contracts.subjects import Subjects
from shared.contracts.system import System
from shared.contracts.tooldef import HttpExecution, ToolDefinition
from shared.lifecycle import Lifecycle
from shared.wiring import Connections
from tests.harness.waiting import poll
from tests.integration.mcp_gateway.helpers import call
from tests.integration.mcp_gateway.systems.recording_server import RecordingServer, Reply

START_ORDER = [
    "the tool pool", "the HTTP systems' credentials learned", "the JetStream ack listener", "the audit outbox",
    "the signals outbox", "the app sessions", "the HTTP systems' client", "the HTTP systems", "the elicitation answers",
    "the call ledger", "the calls in flight", "the gateway's endpoints", "the approval sweeper",
    "the chat answers to approvals",
]


def stops_recorded(service: GatewayAssembly) -> list[str]:
    """The names of the parts, as each one's stop is called (then it stops as it would)."""
    stopped: list[str] = []
    for part in service.order:
        assert isinstance(part, Lifecycle)
        real_stop, name = part.stop, part.name

        async def stop(real_stop=real_stop, name=name) -> None:  # type: ignore[no-untyped-def]
            stopped.append(name)
            await real_stop()

        part.stop = stop  # type: ignore[method-assign]
    return stopped


async def test_the_gateway_is_built_in_process_serves_a_call_and_stops_whole_in_reverse(
        nc: NATS, subjects: Subjects, notes_url: str) -> None:
    apps = parse_apps_config({"apps": {"notes": {
        "package": "acme.notes", "mcp": {"transport": "streamable_http", "url": notes_url}}}})
    settings = GatewaySettings(apps=apps, approval_sweep_seconds=3600, shutdown_wait_seconds=1)
    service = await build_gateway(GatewaySetup(subjects, settings), Connections(nc))
    assert [getattr(part, "name", None) for part in service.order] == START_ORDER
    assert not any(part.started for part in service.order if isinstance(part, Lifecycle))  # built, not started
    stopped = stops_recorded(service)
    async with service:
        answer = await call(nc, subjects, "acme.notes.list_notes", {}, wait=10)
        assert answer["status"] == "ok", answer
        [session] = service.parts.sessions.sessions.values()
        assert session.status == "connected"
    assert stopped == list(reversed(START_ORDER))
    assert not any(part.started for part in service.order if isinstance(part, Lifecycle))
    assert session.status == "closed"  # the app was told the session ended
    with pytest.raises(NoRespondersError):
        await nc.request(subjects.operator_tool_call, b"{}", timeout=2)
    with pytest.raises(NoRespondersError):
        await nc.request(subjects.admin("gateway", "apps"), b"{}", timeout=2)


async def test_a_call_in_flight_when_the_gateway_stops_is_answered_before_what_it_uses_stops(
        nc: NATS, subjects: Subjects) -> None:
    # An HTTP system that answers after 1.5 s: the gateway is told to stop while it waits.
    server = RecordingServer(lambda _request: Reply.json({"orders": 3}, delay=1.5)).start()
    settings = GatewaySettings(apps=AppsConfig(), approval_sweep_seconds=3600, shutdown_wait_seconds=10)
    service = await build_gateway(GatewaySetup(subjects, settings), Connections(nc))
    try:
        async with service:
            pool = service.parts.pool
            await pool.put_system(System(name="shop", base_url=server.url))
            await pool.put_tool(ToolDefinition(name="shop.orders", system="shop", side_effect="read",
                                               execution=HttpExecution(method="GET", path="/orders")))
            await poll(lambda: asyncio.sleep(0, pool.tools.get("shop.orders")), what="the tool in the pool")
            calling = asyncio.create_task(call(nc, subjects, "shop.orders", {}, wait=15))
            await poll(lambda: asyncio.sleep(0, server.requests), what="the call to reach the system")
            assert not calling.done()
        # Stopped: the endpoints first, then the call was let finish, then the HTTP client closed.
        answer = await calling
    finally:
        server.stop()
    assert answer["status"] == "ok" and answer["structured"] == {"orders": 3}, answer
