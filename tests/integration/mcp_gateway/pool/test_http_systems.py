"""HTTP systems through the gateway: OpenAPI import, exact argument types, business results,
unknown outcomes of writes, and a circuit that opens and recovers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import AdminRequestError
from tests.harness.tool_pool import Pool
from tests.harness.waiting import poll
from tests.integration.mcp_gateway.pool.helpers import gateway_with_orders
from tests.integration.mcp_gateway.systems.recording_server import Recorded, RecordingServer, Reply

SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "Orders (test)", "version": "1"},
    "paths": {
        "/devices/{id}": {"get": {
            "operationId": "getDevice", "summary": "Get a device",
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"},
                            "description": "device id"}],
            "responses": {"200": {"description": "the device"}},
        }},
        "/orders": {"post": {
            "operationId": "createOrder", "summary": "Create an order",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["item"],
                "properties": {"item": {"type": "string"}, "qty": {"type": "integer"},
                               "price": {"type": "number"}, "rush": {"type": "boolean"},
                               "note": {"type": "string", "nullable": True},
                               "tags": {"type": "array", "items": {"type": "string"}},
                               "meta": {"type": "object"}}}}}},
            "responses": {"200": {"description": "the order"}},
        }},
    },
}


def answer(request: Recorded) -> Reply:
    if request.path == "/devices/404":
        return Reply.json({"code": 1, "msg": "no such device"})
    if request.path.startswith("/devices/"):
        return Reply.json({"code": 0, "data": {"id": int(request.path.rsplit("/", 1)[1])}})
    body = json.loads(request.body or b"{}")
    # Far past the 1 s timeout: even a gateway starved of CPU for seconds sees the timeout first.
    return Reply.json({"code": 0, "data": {"order": 7}}, delay=10.0 if body.get("item") == "slow" else 0.0)


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    recording = RecordingServer(answer).start()
    yield recording
    recording.stop()


@pytest.fixture
async def http_pool(nc: NATS, subjects: Subjects, spawn: Any, tmp_path: Path,
                    server: RecordingServer) -> AsyncIterator[Pool]:
    pool, imported = await gateway_with_orders(nc, subjects, spawn, tmp_path, base_url=server.url, spec=SPEC,
                                               cooldown=1.0)
    assert sorted(imported["created"]) == ["orders.createOrder", "orders.getDevice"], imported
    yield pool


async def test_import_makes_drafts_and_importing_again_duplicates_nothing(http_pool: Pool, tmp_path: Path,
                                                                         server: RecordingServer) -> None:
    tool = await http_pool.admin("tools", "get", {"id": "orders.createOrder"})
    assert tool["state"] == "DRAFT" and tool["side_effect"] == "write" and tool["source"] == "openapi"
    again = await http_pool.admin("systems", "import_openapi", {"name": "orders", "base_url": server.url,
                                                                "spec": str(tmp_path / "orders.yaml")})
    assert again["created"] == [] and sorted(again["unchanged"]) == ["orders.createOrder", "orders.getDevice"]


async def test_every_json_type_reaches_the_http_system_exactly(http_pool: Pool, server: RecordingServer) -> None:
    arguments = {"item": "bolt", "qty": 3, "price": 1.0, "rush": False, "note": None, "tags": ["a", "b"],
                 "meta": {"nested": {"n": [1, 2.5, True, None]}}}
    result = await http_pool.call("orders.createOrder", arguments, call_id="order-call-1")
    assert result["status"] == "ok", result
    sent = server.requests[-1]
    assert json.loads(sent.body) == arguments
    assert b'"price":1.0' in sent.body.replace(b" ", b"")
    # The system declares its idempotency header: a write carries the call id in it.
    assert sent.header("Idempotency-Key") == "order-call-1"


async def test_a_write_asked_again_with_its_call_id_reaches_the_system_once(http_pool: Pool,
                                                                           server: RecordingServer) -> None:
    first = await http_pool.call("orders.createOrder", {"item": "once"}, call_id="order-call-2")
    again = await http_pool.call("orders.createOrder", {"item": "once"}, call_id="order-call-2")
    assert first["status"] == "ok" and again == first
    assert [r.header("Idempotency-Key") for r in server.requests if r.path == "/orders"] == ["order-call-2"]
    read = await http_pool.call("orders.getDevice", {"id": 5}, call_id="device-call-1")
    assert read["status"] == "ok" and server.requests[-1].header("Idempotency-Key") is None


async def test_http_200_with_a_failure_code_is_a_business_error(http_pool: Pool) -> None:
    result = await http_pool.call("orders.getDevice", {"id": 404})
    assert result["status"] == "business_error" and "no such device" in result["error"]["message"]
    ok = await http_pool.call("orders.getDevice", {"id": 5})
    assert ok["status"] == "ok" and ok["structured"]["data"] == {"id": 5}


async def test_a_write_that_times_out_after_sending_has_an_unknown_outcome(http_pool: Pool,
                                                                         server: RecordingServer) -> None:
    result = await http_pool.call("orders.createOrder", {"item": "slow"})
    assert result["status"] == "outcome_unknown", result
    assert sum(1 for r in server.requests if r.path == "/orders") == 1  # never retried


async def test_a_dead_system_opens_its_circuit_and_recovers(http_pool: Pool, server: RecordingServer) -> None:
    port = server.port
    server.stop()
    first = await http_pool.call("orders.getDevice", {"id": 1})
    down = {s["name"]: s for s in await http_pool.admin("systems", "status")}["orders"]
    assert (down["health"], down["circuit"], down["probe"], down["last_probe"]) == ("down", "closed", None, None)
    assert "could not be sent" in down["last_error"] and down["last_call"] is not None  # judged by its calls
    second = await http_pool.call("orders.getDevice", {"id": 1})
    assert first["status"] == second["status"] == "unavailable"
    blocked = await http_pool.call("orders.getDevice", {"id": 1})
    assert blocked["status"] == "unavailable" and blocked["error"]["code"] == "circuit_open"
    status = {s["name"]: s for s in await http_pool.admin("systems", "status")}
    assert status["orders"]["circuit"] == "open"
    revived = RecordingServer(answer, port=port).start()
    try:
        await asyncio.sleep(1.1)
        recovered = await http_pool.call("orders.getDevice", {"id": 1})
        assert recovered["status"] == "ok", recovered
        status = {s["name"]: s for s in await http_pool.admin("systems", "status")}
        assert status["orders"]["circuit"] == "closed"
        assert (status["orders"]["health"], status["orders"]["last_error"]) == ("up", None)
        assert status["orders"]["last_call"] > down["last_call"]
    finally:
        revived.stop()


async def test_an_imported_probe_shows_when_it_last_ran_and_what_it_saw(http_pool: Pool, tmp_path: Path,
                                                                        server: RecordingServer) -> None:
    with pytest.raises(AdminRequestError, match="field 'probe': interval_seconds: Input should be greater than 0"):
        await http_pool.admin("systems", "import_openapi", {
            "name": "orders", "base_url": server.url, "spec": str(tmp_path / "orders.yaml"),
            "probe": {"path": "/healthz", "interval_seconds": 0}})
    await http_pool.admin("systems", "import_openapi", {
        "name": "orders", "base_url": server.url, "spec": str(tmp_path / "orders.yaml"),
        "probe": {"path": "/healthz", "interval_seconds": 0.2}})

    async def status(*, health: str) -> dict[str, Any] | None:
        orders = {s["name"]: s for s in await http_pool.admin("systems", "status")}["orders"]
        return orders if orders["health"] == health and orders["last_probe"] else None

    up = await poll(lambda: status(health="up"), timeout=10, what="the probe to see orders up")
    assert up["probe"] == "GET /healthz every 0.2s" and up["last_call"] is None
    assert up["tools"] == 0  # both imported operations are drafts
    await http_pool.admin("tools", "review", {"name": "orders.getDevice"})
    await http_pool.admin("tools", "publish", {"name": "orders.getDevice"})
    assert {s["name"]: s for s in await http_pool.admin("systems", "status")}["orders"]["tools"] == 1
    assert any(r.path == "/healthz" for r in server.requests)
    server.stop()

    async def refused() -> dict[str, Any] | None:  # a probe on a connection the stop closed says ReadError
        down = await status(health="down")
        return down if down is not None and "ConnectError" in (down["last_error"] or "") else None

    down = await poll(refused, timeout=10, what="a probe of orders refused")
    assert "/healthz" in down["last_error"], down
    assert down["last_probe"] > up["last_probe"]
