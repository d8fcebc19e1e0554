"""The gateway as a 2026-07-28 client, on the wire (docs/reference/mcp-conformance.md, rows G1,
G2, G7, G8, G9): a raw HTTP app that records what it is sent and answers what the spec allows
and what it forbids, reached through the gateway's own transport (`transports/streamable_http`),
negotiation (`transports/generations`), listing (`sessions/calls`) and stateless call
(`server_requests/input_required`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import pytest
import uvicorn
from mcp import ClientSession
from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from services.mcp_gateway.server_requests import input_required
from services.mcp_gateway.sessions.calls import list_all_tools
from services.mcp_gateway.sessions.session import CLIENT_INFO
from services.mcp_gateway.transports.generations import negotiate
from services.mcp_gateway.transports.streamable_http import http_transport
from tests.harness.waiting import poll

MODERN = "2026-07-28"
TOOLS = [
    {"name": "routed", "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}}},
    # `x-mcp-header` on a number is forbidden: a conforming client drops the tool
    {"name": "misdeclared", "inputSchema": {"type": "object", "properties": {
        "amount": {"type": "number", "x-mcp-header": "Amount"}}}},
    {"name": "strange", "inputSchema": {"type": "object"}},
]
CALLS = {  # each tool's answer: the spec's, and one of a type no extension the gateway declared defines
    "routed": {"resultType": "complete", "content": [{"type": "text", "text": "routed"}]},
    "strange": {"resultType": "unheard-of", "content": [{"type": "text", "text": "strange"}]},
}


class RawApp:
    """A 2026-07-28 app written without the SDK: it keeps every request's headers and body."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.requests.append((headers, request))
        result = self.answer(request["method"], request.get("params") or {})
        data = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})

    @staticmethod
    def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
        if method == "server/discover":
            return {"resultType": "complete", "supportedVersions": [MODERN], "capabilities": {"tools": {}},
                    "ttlMs": 0, "cacheScope": "public"}
        if method == "tools/list":
            return {"resultType": "complete", "tools": TOOLS, "ttlMs": 0, "cacheScope": "public"}
        return CALLS[params["name"]]

    def sent(self, tool: str) -> tuple[dict[str, str], dict[str, Any]]:
        return next((h, b) for h, b in reversed(self.requests)
                    if b["method"] == "tools/call" and b["params"]["name"] == tool)


@pytest.fixture
async def raw_app() -> AsyncIterator[tuple[RawApp, str]]:
    app = RawApp()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    await poll(lambda: _started(server), what="the raw app to serve")
    try:
        yield app, f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        server.should_exit = True
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(serving, 10)


async def _started(server: uvicorn.Server) -> bool:
    return bool(server.started)  # uvicorn says so by this flag alone


async def unanswered(request: types.InputRequest) -> types.ErrorData:
    raise AssertionError("this app asks nothing")


@contextlib.asynccontextmanager
async def stateless_session(url: str) -> AsyncIterator[ClientSession]:
    async with http_transport(url, {}, {}) as (read, write), ClientSession(read, write, client_info=CLIENT_INFO) as s:
        assert await negotiate(s, "auto") == MODERN
        yield s


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
    return await input_required.call_tool(session, tool, arguments, timeout=10, meta=None, answer=unanswered)


async def test_the_gateways_requests_carry_the_headers_and_envelope(raw_app: tuple[RawApp, str]) -> None:
    app, url = raw_app
    async with stateless_session(url) as session:
        listed = await list_all_tools(session)
        result = await call(session, "routed", {"region": "eu-west"})
    assert [c.text for c in result.content if isinstance(c, types.TextContent)] == ["routed"]
    # G8: a tool whose x-mcp-header breaks the rules is not offered at all
    assert [t.name for t in listed] == ["routed", "strange"]
    headers, _ = app.sent("routed")
    # G1: the request metadata headers, the tool's parameter mirrored as the app declared it
    assert headers["mcp-protocol-version"] == MODERN and headers["mcp-method"] == "tools/call", headers
    assert headers["mcp-name"] == "routed" and headers["mcp-param-region"] == "eu-west", headers
    # G2: the envelope on every request, the gateway named
    for sent_headers, sent in app.requests:
        meta = sent["params"]["_meta"]
        assert meta["io.modelcontextprotocol/protocolVersion"] == MODERN, sent
        assert "io.modelcontextprotocol/clientCapabilities" in meta, sent
        assert meta["io.modelcontextprotocol/clientInfo"]["name"] == CLIENT_INFO.name, sent
        assert sent_headers["mcp-method"] == sent["method"], sent_headers


async def test_a_result_of_an_unknown_type_is_refused(raw_app: tuple[RawApp, str]) -> None:
    """G7: "A `resultType` of any value unrecognized by the client MUST be considered invalid"
    (the gateway declares no extension). An absent one from a 2025-11-25 app is `complete`: the
    handshake app of test_modern_protocol.py sends none."""
    _, url = raw_app
    async with stateless_session(url) as session:
        await list_all_tools(session)
        with pytest.raises(Exception) as refused:
            await call(session, "strange", {})
    assert "unheard-of" in str(refused.value) or "resultType" in str(refused.value), repr(refused.value)


async def test_the_calls_trace_goes_to_the_app(raw_app: tuple[RawApp, str]) -> None:
    """G9: the trace current when the gateway calls (its span for the call, with tracing on) is
    in the request's `_meta` as W3C `traceparent`."""
    app, url = raw_app
    trace_id, span_id = 0x4BF92F3577B34DA6A3CE929D0E0E4736, 0x00F067AA0BA902B7
    span = NonRecordingSpan(SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(1)))
    async with stateless_session(url) as session:
        await list_all_tools(session)
        with trace.use_span(span):
            await call(session, "routed", {"region": "eu"})
    _, body = app.sent("routed")
    traceparent = body["params"]["_meta"].get("traceparent", "")
    assert traceparent.split("-")[1:3] == [f"{trace_id:032x}", f"{span_id:016x}"] or \
        traceparent.split("-")[1] == f"{trace_id:032x}", body["params"]["_meta"]
