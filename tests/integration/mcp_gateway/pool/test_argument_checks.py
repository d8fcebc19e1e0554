"""Arguments checked at the real gateway before anything is sent: a real HTTP server records
exactly what reached it (the raw request target), a real MCP app answers the echo tools."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.tool_pool import Pool, call, published_to, read_stream
from tests.integration.mcp_gateway.pool.helpers import gateway_with_orders
from tests.integration.mcp_gateway.systems.recording_server import RecordingServer, Reply

AGENT = "buyer"
READ, WRITE = "orders.getUser", "orders.createOrder"
SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "Users and orders", "version": "1"},
    "paths": {
        "/users/{name}": {"get": {
            "operationId": "getUser", "summary": "A user",
            "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},
                           {"name": "q", "in": "query", "schema": {"type": "string"}},
                           {"name": "X-Tag", "in": "header", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "the user"}},
        }},
        "/orders": {"post": {
            "operationId": "createOrder", "summary": "Create an order",
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "required": ["item"],
                "properties": {"item": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}}}}}},
            "responses": {"200": {"description": "the order"}},
        }},
    },
}


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    recording = RecordingServer(lambda _request: Reply.json({"code": 0, "data": {}})).start()
    yield recording
    recording.stop()


@pytest.fixture
async def orders(nc: NATS, subjects: Subjects, spawn: Any, tmp_path: Path,
                 server: RecordingServer) -> AsyncIterator[Pool]:
    pool, imported = await gateway_with_orders(nc, subjects, spawn, tmp_path, base_url=server.url, spec=SPEC,
                                               cooldown=3.0)
    assert sorted(imported["created"]) == [WRITE, READ], imported
    await published_to(pool, AGENT, READ, WRITE)
    yield pool


async def test_wrong_arguments_are_denied_audited_and_never_reach_the_system_and_values_go_encoded(
        orders: Pool, server: RecordingServer) -> None:
    write_id, write = await call(orders, WRITE, {"item": "bolt", "qty": "three"}, agent=AGENT, task_id="t-1")
    assert write["status"] == "denied" and write["error"]["code"] == "invalid_arguments", write
    assert "/qty: 'three' is not of type 'integer'" in write["error"]["message"]
    assert write["approval_id"] is None  # refused before an approval was even asked for
    read_id, read = await call(orders, READ, {"name": 5})  # the operator's calls are checked too
    assert read["status"] == "denied" and "/name: 5 is not of type 'string'" in read["error"]["message"], read
    _, fine = await call(orders, READ, {"name": "ada"})
    assert fine["status"] == "ok", fine  # the positive sign: this one did reach the server …
    assert [r.target for r in server.requests] == ["/users/ada"]  # … and it is the only one that did
    assert await orders.admin("approvals", "list", {}) == []

    audited: dict[str, dict[str, Any]] = {}

    def both(record: dict[str, Any]) -> bool:
        audited[record["call_id"]] = record
        return {write_id, read_id} <= set(audited)

    await read_stream(orders.nc, "AMP_AUDIT", orders.subjects.audit("orders"), both)
    for call_id in (write_id, read_id):
        assert audited[call_id]["status"] == "denied", audited[call_id]
        assert audited[call_id]["error_code"] == "invalid_arguments", audited[call_id]

    # Values that pass the schema reach the server encoded: a path value stays one segment.
    server.requests.clear()
    for name in ("..", ".", "a/b", "x y?#%"):
        _, result = await call(orders, READ, {"name": name, "q": "a&b=c d+e", "X-Tag": "t 1"})
        assert result["status"] == "ok", result
    targets = [r.target.split("?", 1)[0] for r in server.requests]
    assert targets == ["/users/%2E%2E", "/users/%2E", "/users/a%2Fb", "/users/x%20y%3F%23%25"]
    assert [unquote(t.rsplit("/", 1)[1]) for t in targets] == ["..", ".", "a/b", "x y?#%"]
    assert all(r.query == [("q", "a&b=c d+e")] and r.header("X-Tag") == "t 1" for r in server.requests)
    _, empty = await call(orders, READ, {"name": ""})
    assert empty["status"] == "denied" and empty["error"]["message"] == "path argument `name` is empty", empty
    assert len(server.requests) == 4


async def test_an_mcp_tool_call_is_checked_before_the_app_sees_it(pool: Pool) -> None:
    refused = await pool.call("echo.counter_increment", {"key": 5})
    assert refused["status"] == "denied" and refused["error"]["code"] == "invalid_arguments", refused
    assert refused["error"]["message"].endswith("input schema: /key: 5 is not of type 'string'")
    write = await pool.call("echo.unannotated_write", {"x": "1"}, agent="clerk", task_id="t-2")
    assert write["status"] == "denied" and "/x: '1' is not of type 'integer'" in write["error"]["message"], write
    counted = await pool.call("echo.counter_get", {"key": "5"})
    assert counted["status"] == "ok" and counted["structured"]["count"] == 0, counted
    assert json.dumps(await pool.admin("approvals", "list", {})) == "[]"
