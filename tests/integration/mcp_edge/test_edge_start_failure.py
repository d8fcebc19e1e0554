"""An edge whose start fails half-way (its port is taken, after its admin endpoints, watches and
session manager had started) stops what it had started, and its process exits 1 saying why."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator

import pytest
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError

from services.mcp_edge.config import EdgeSettings
from services.mcp_edge.wiring import EdgeSetup, build_edge
from shared.contracts.subjects import Subjects
from shared.lifecycle import NotStarted
from shared.wiring import Connections
from tests.harness.processes import ServiceProcess


@pytest.fixture
def taken_port() -> Iterator[int]:
    holder = socket.socket(socket.AF_INET)
    holder.bind(("127.0.0.1", 0))
    holder.listen()
    try:
        yield holder.getsockname()[1]
    finally:
        holder.close()


async def test_a_failed_start_stops_the_parts_started_before_it(nc: NATS, subjects: Subjects,
                                                                 taken_port: int) -> None:
    edge = await build_edge(EdgeSetup(subjects, EdgeSettings(port=taken_port, refresh_seconds=0.2)), Connections(nc))
    with pytest.raises(OSError):
        await edge.start()
    # The admin service had answered on `$SRV.PING…` before the bind failed; the server now has
    # no subscriber for it: it says so at once.
    with pytest.raises(NoRespondersError):
        await nc.request("$SRV.PING.aurora-mcp-edge", b"", timeout=2)
    assert not edge.started and not any(part.started for part in edge.order)
    with pytest.raises(NotStarted, match="the edge's HTTP server used before start"):
        _ = edge.parts.http.port

    # The same build starts once the port is free, and serves.
    free = await build_edge(EdgeSetup(subjects, EdgeSettings(port=0, refresh_seconds=0.2)), Connections(nc))
    async with free:
        assert free.parts.http.port > 0
        reply = await nc.request("$SRV.PING.aurora-mcp-edge", b"", timeout=2)
        assert b"aurora-mcp-edge" in reply.data


async def test_the_process_exits_1_naming_the_failure(spawn: Callable[..., ServiceProcess],
                                                      taken_port: int) -> None:
    edge = spawn("services.mcp_edge", tag="edge-taken", AURORA_EDGE_PORT=str(taken_port))
    code = await asyncio.to_thread(edge.wait, 60)
    logs = edge.logs()
    assert code == 1, logs[-3000:]
    assert "aurora-mcp-edge: start-up failed: OSError" in logs, logs[-3000:]
    assert "(what had started was stopped)" in logs, logs[-3000:]
    assert "start failed; what had started was stopped" in logs, logs[-3000:]
    assert '"serving"' not in logs
