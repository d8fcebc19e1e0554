"""The gateway built by `build_gateway` against a real nats-server: every call gets a reply even when the gateway
fails while handling it, and a start-up that fails half-way leaves nothing running."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import nats
import pytest
from nats.aio.client import Client as NATS

from aurora_cli.localnats import LocalNats, free_port
from services.mcp_gateway.config import GatewaySettings
from services.mcp_gateway.pool.live_catalog import CatalogConflict
from services.mcp_gateway.pool.registry import ToolPool
from services.mcp_gateway.wiring import GatewayAssembly, GatewaySetup, build_gateway
from shared.config.appconfig import AppsConfig, parse_apps_config
from shared.contracts.subjects import Subjects
from shared.contracts.system import System
from shared.contracts.tooldef import HttpExecution, SideEffect, ToolDefinition
from shared.wiring import Connections
from tests.harness.clients import nats_client
from tests.integration.mcp_gateway.helpers import call
from tests.integration.mcp_gateway.systems.recording_server import RecordingServer

SUBJECTS = Subjects("amp")
ERROR_ID = re.compile(r"internal gateway error ([0-9a-f-]{36})")


class KvDown(ToolPool):
    """The pool as it is when its KV read fails: every lookup raises."""

    async def tool(self, name: str) -> ToolDefinition | None:
        raise ConnectionError("tools bucket unreachable")


class FailsAfterSending(httpx.AsyncBaseTransport):
    """A real HTTP transport that fails once the request has been sent and answered: the
    gateway breaks after the system may have acted."""

    def __init__(self) -> None:
        self._real = httpx.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._real.handle_async_request(request)
        await response.aread()
        if request.url.path == "/orders":
            raise AssertionError("the gateway broke after sending")
        return response

    async def aclose(self) -> None:
        await self._real.aclose()


@pytest.fixture
def monitored(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """A nats-server with its monitoring port, to see each connection's subscriptions."""
    monitor = free_port()
    config = tmp_path / "nats.conf"
    config.write_text(f"http: 127.0.0.1:{monitor}\n", encoding="utf-8")
    server = LocalNats(tmp_path / "js", log_file=tmp_path / "nats.log", config_file=config)
    server.start()
    try:
        yield server.url, monitor
    finally:
        server.stop()


@pytest.fixture
async def mnc(monitored: tuple[str, int]) -> AsyncIterator[NATS]:
    async with nats_client(monitored[0], name="gateway-under-test") as client:
        yield client


def subscriptions(monitor: int, name: str) -> list[str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{monitor}/connz?subs=1", timeout=5) as answer:
        connz: dict[str, Any] = json.load(answer)
    (conn,) = [c for c in connz["connections"] if c.get("name") == name]
    return sorted(conn.get("subscriptions_list") or [])


def settings(apps: AppsConfig | None = None) -> GatewaySettings:
    return GatewaySettings(apps=apps or AppsConfig(), approval_sweep_seconds=3600, shutdown_wait_seconds=1)


async def gateway(nc: NATS, apps: AppsConfig | None = None, *, pool: ToolPool | None = None,
                  http_client: httpx.AsyncClient | None = None) -> GatewayAssembly:
    return await build_gateway(GatewaySetup(SUBJECTS, settings(apps), pool=pool, http_client=http_client),
                               Connections(nc))


def error_id_of(reply: dict[str, Any]) -> str:
    assert reply["error"]["code"] == "internal_error", reply
    found = ERROR_ID.search(reply["error"]["message"])
    assert found, reply
    return found.group(1)


def logged_with_traceback(caplog: pytest.LogCaptureFixture, error_id: str) -> logging.LogRecord:
    records = [r for r in caplog.records if getattr(r, "fields", {}).get("error_id") == error_id]
    assert len(records) == 1, [r.getMessage() for r in caplog.records]
    assert records[0].exc_info is not None
    return records[0]


async def test_a_call_whose_handling_raises_gets_internal_error_unavailable_and_the_id_is_logged(
        nc: NATS, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="aurora.mcp_gateway")
    service = await gateway(nc, pool=KvDown(nc.jetstream(), SUBJECTS))
    await service.start()
    try:
        reply = await call(nc, SUBJECTS, "crm.customers.get", {"id": 1}, wait=5)
        # nothing reached an app: the caller may retry
        assert reply["status"] == "unavailable", reply
        record = logged_with_traceback(caplog, error_id_of(reply))
        assert "tools bucket unreachable" in logging.Formatter().formatException(record.exc_info)  # type: ignore[arg-type]
        again = await call(nc, SUBJECTS, "crm.customers.get", {"id": 1}, wait=5)
        assert error_id_of(again) != error_id_of(reply)  # one id per failure, the gateway still serves
    finally:
        await service.stop()


@pytest.mark.parametrize(("side_effect", "method", "status"), [
    ("write", "POST", "outcome_unknown"),  # it may have taken effect: check, never blindly repeat
    ("read", "GET", "tool_error"),
])
async def test_a_failure_after_the_call_was_sent_says_so(nc: NATS, caplog: pytest.LogCaptureFixture,
                                                         side_effect: SideEffect, method: str, status: str) -> None:
    caplog.set_level(logging.ERROR, logger="aurora.mcp_gateway")
    server = RecordingServer().start()
    seed = ToolPool(nc.jetstream(), SUBJECTS)
    await seed.start()
    await seed.put_system(System(name="shop", base_url=server.url))
    await seed.put_tool(ToolDefinition(name="shop.orders", system="shop", side_effect=side_effect,
                                       execution=HttpExecution(method=method, path="/orders")))  # type: ignore[arg-type]
    await seed.stop()
    service = await gateway(nc, http_client=httpx.AsyncClient(transport=FailsAfterSending()))
    await service.start()
    try:
        reply = await call(nc, SUBJECTS, "shop.orders", {}, wait=10)
        assert (reply["status"], reply["side_effect"]) == (status, side_effect), reply
        assert [(r.method, r.path) for r in server.requests] == [(method, "/orders")]  # it was sent
        logged_with_traceback(caplog, error_id_of(reply))
    finally:
        await service.stop()
        server.stop()


async def test_a_start_up_that_fails_half_way_leaves_nothing_running(mnc: NATS, monitored: tuple[str, int],
                                                                     notes_url: str) -> None:
    # Two instances of one package expose the same prefixed tools: the catalog check fails only
    # once both sessions are up, after the pool, the outboxes and the sessions have started.
    apps = parse_apps_config({"apps": {
        name: {"package": "acme.notes", "instance": name, "mcp": {"transport": "streamable_http", "url": notes_url}}
        for name in ("one", "two")
    }})
    await mnc.jetstream().account_info()  # nats-py's shared reply inbox for requests exists from here on
    await mnc.flush()
    service = await gateway(mnc, apps)  # opens streams and buckets, starts nothing
    before_tasks = asyncio.all_tasks()
    before = subscriptions(monitored[1], "gateway-under-test")
    assert len(before) == 1
    with pytest.raises(CatalogConflict):
        await service.start()
    await mnc.flush()
    assert subscriptions(monitored[1], "gateway-under-test") == before  # no KV watcher, no endpoint left
    left = asyncio.all_tasks() - before_tasks
    assert not left, sorted(t.get_name() for t in left)  # no session, outbox or watcher task
    await service.stop()  # stopping what never started is harmless
    with pytest.raises(nats.errors.NoRespondersError):
        await mnc.request(SUBJECTS.operator_tool_call, b"{}", timeout=2)


async def test_start_and_stop_are_idempotent(nc: NATS) -> None:
    service = await gateway(nc)
    await service.start()
    await service.start()
    try:
        reply = await call(nc, SUBJECTS, "crm.customers.get", {}, wait=5)
        assert reply["error"]["code"] == "unknown_tool", reply
    finally:
        await service.stop()
        await service.stop()
    with pytest.raises(nats.errors.NoRespondersError):
        await nc.request(SUBJECTS.operator_tool_call, b"{}", timeout=2)
