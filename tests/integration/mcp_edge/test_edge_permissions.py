"""mcp-edge's NATS user against deploy/nats-auth.conf: it does its whole job with its own
credential, and no other identity may use its call subject or its buckets (nor it others')."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import mcp_types as types
import msgspec
import pytest
from mcp.client.client import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from nats.aio.msg import Msg

from aurora_cli.localnats import free_port
from services.mcp_edge.config import EdgeSettings
from services.mcp_edge.wiring import EdgeSetup, build_edge
from shared.contracts import edge_ask
from shared.contracts.subjects import Subjects
from shared.contracts.toolcall import ToolCallResult, ToolResultEnvelope, decode_request, encode
from shared.jetstream.streams import agents_bucket, approvals_bucket, ensure_bucket, tools_bucket
from shared.nats.admin_service import admin_request, start_admin_service
from shared.wiring import Connections
from tests.harness.secure_nats import SecureNats, Session, open_session, start_secure_nats
from tests.integration.mcp_edge.helpers import LEGACY, MODERN, bearer, connected

SUBJECTS = Subjects("amp")
OTHERS = ("event-bridge", "app-supervisor", "mcp-gateway", "router", "runner", "operator", "consumer")
TOOL = "test.echo.echo"


@pytest.fixture
async def secure(tmp_path: Path) -> AsyncIterator[SecureNats]:
    stack = start_secure_nats(tmp_path)
    try:
        yield stack
    finally:
        stack.server.stop()


async def session(secure: SecureNats, user: str) -> Session:
    return await open_session(secure.url, user, secure.credentials.passwords[user])


async def stand_in_gateway(gateway: Session, calls: list[dict[str, Any]]) -> Any:
    """What the edge needs of the gateway, served with the gateway's own user: an agent's tools,
    and the answer to an edge call (the real gateway's gate is tested in the edge stack)."""
    gjs = gateway.nc.jetstream()
    for bucket in (approvals_bucket, tools_bucket, agents_bucket):
        await ensure_bucket(gjs, bucket(SUBJECTS))

    async def agent_tools(body: dict[str, Any]) -> dict[str, Any]:
        function = {"name": "t0", "description": "echo", "parameters": {"type": "object"}}
        return {"agent": body["agent"], "enabled": True, "tools": [{"type": "function", "function": function}],
                "available": [{"name": TOOL, "side_effect": "read", "llm_name": "t0"}]}

    async def answer(msg: Msg) -> None:
        request = decode_request(msg.data)
        calls.append(msgspec.to_builtins(request.payload.context))
        result = ToolCallResult(status="ok", structured={"echoed": request.payload.arguments})
        await msg.respond(encode(ToolResultEnvelope(header=request.header, payload=result)))

    await gateway.nc.subscribe(SUBJECTS.edge_tool_call, cb=answer)
    return await start_admin_service(gateway.nc, SUBJECTS, name="stand-in", version="0.1.0",
                                     areas={"agents": {"tools": agent_tools}})


async def test_mcp_edge_does_its_job_with_its_own_credential(secure: SecureNats) -> None:
    gateway, edge_session, operator_session = [await session(secure, u)
                                               for u in ("mcp-gateway", "mcp-edge", "operator")]
    calls: list[dict[str, Any]] = []
    service = await stand_in_gateway(gateway, calls)
    port = free_port("127.0.0.1")
    edge_service = await build_edge(EdgeSetup(SUBJECTS, EdgeSettings(port=port, refresh_seconds=0.5)),
                                    Connections(edge_session.nc))
    await edge_service.start()
    try:
        created = await admin_request(operator_session.nc, SUBJECTS, "tokens", "create", {"agent": "perm"})
        listed = await admin_request(operator_session.nc, SUBJECTS, "tokens", "list", {})
        assert [t["id"] for t in listed["tokens"]] == [created["id"]]
        async with connected(f"http://127.0.0.1:{port}/agents/perm/mcp", created["token"], MODERN) as client:
            assert [t.name for t in (await client.list_tools()).tools] == [TOOL]
            result = await client.call_tool(TOOL, {"x": 1})
        assert result.structured_content == {"echoed": {"x": 1}}
        assert calls[0]["agent"] == "perm" and calls[0]["actor"] == {"id": f"token:{created['id']}", "kind": "api"}
        await edge_session.clean()  # nothing it did was refused
    finally:
        await edge_service.stop()
        await service.stop()
        for opened in (gateway, edge_session, operator_session):
            await opened.nc.close()


@pytest.mark.parametrize("user", OTHERS)
async def test_no_other_identity_calls_as_the_edge_or_reads_its_tokens(secure: SecureNats, user: str) -> None:
    other = await session(secure, user)
    await other.nc.publish(SUBJECTS.edge_tool_call, b"{}")
    await other.refused(SUBJECTS.edge_tool_call)
    await other.nc.publish("$KV.AMP_EDGE_TOKENS.stolen", b"{}")
    await other.refused("$KV.AMP_EDGE_TOKENS.stolen")
    await other.nc.publish("$KV.AMP_EDGE_SESSIONS.forged", b"{}")
    await other.refused("$KV.AMP_EDGE_SESSIONS.forged")
    # Nobody but mcp-edge reads the hashes, the operator included (`aurora tokens` asks mcp-edge).
    for bucket in ("AMP_EDGE_TOKENS", "AMP_EDGE_SESSIONS"):
        await other.nc.publish(f"$JS.API.DIRECT.GET.KV_{bucket}.$KV.{bucket}.x", b"")
        await other.refused(f"$JS.API.DIRECT.GET.KV_{bucket}.$KV.{bucket}.x")
    await other.nc.close()


async def test_the_edge_cannot_act_as_a_runner_or_decide_approvals(secure: SecureNats) -> None:
    edge = await session(secure, "mcp-edge")
    for subject in (SUBJECTS.tool_call, SUBJECTS.admin("approvals", "grant"), "$KV.AMP_APPROVALS.apr-x",
                    "$KV.AMP_AGENTS.a", "amp.evt.x.message.received", SUBJECTS.admin("agents", "apply")):
        await edge.nc.publish(subject, b"{}")
        await edge.refused(subject)
    await edge.nc.subscribe(SUBJECTS.edge_tool_call)  # answering its own calls as the gateway
    await edge.refused(SUBJECTS.edge_tool_call, action="subscription")
    await asyncio.sleep(0)
    await edge.nc.close()


async def test_the_gateway_asks_an_edge_client_and_the_edge_relays_its_answer(secure: SecureNats) -> None:
    """With their own credentials: the gateway asks on `edge.ask.<task>`, the edge asks its
    2025-11-25 client within the open call, and the client's answer (a POST to the edge, heard on
    `edge.reply.<session>`) comes back to the gateway."""
    gateway, edge_session, operator_session = [await session(secure, u)
                                               for u in ("mcp-gateway", "mcp-edge", "operator")]
    asked: list[str] = []

    async def agent_tools(body: dict[str, Any]) -> dict[str, Any]:
        function = {"name": "t0", "description": "asks", "parameters": {"type": "object"}}
        return {"agent": body["agent"], "enabled": True, "tools": [{"type": "function", "function": function}],
                "available": [{"name": TOOL, "side_effect": "read", "llm_name": "t0"}]}

    async def answer(msg: Msg) -> None:  # the gateway's part: ask the caller's client, say what it said
        request = decode_request(msg.data)
        ask = edge_ask.EdgeAsk(method="elicitation/create", app="test.echo", timeout_seconds=10, params={
            "mode": "form", "message": "your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}})
        reply = await gateway.nc.request(SUBJECTS.edge_ask(request.payload.context.task_id or ""),
                                         edge_ask.encode(ask), timeout=15)
        said = edge_ask.decode_answer(reply.data)
        result = ToolCallResult(status="ok", structured=msgspec.to_builtins(said))
        await msg.respond(encode(ToolResultEnvelope(header=request.header, payload=result)))

    async def elicited(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    gjs = gateway.nc.jetstream()
    for bucket in (approvals_bucket, tools_bucket, agents_bucket):
        await ensure_bucket(gjs, bucket(SUBJECTS))
    await gateway.nc.subscribe(SUBJECTS.edge_tool_call, cb=answer)
    service = await start_admin_service(gateway.nc, SUBJECTS, name="stand-in", version="0.1.0",
                                        areas={"agents": {"tools": agent_tools}})
    port = free_port("127.0.0.1")
    edge_service = await build_edge(EdgeSetup(SUBJECTS, EdgeSettings(port=port, refresh_seconds=0.5)),
                                    Connections(edge_session.nc))
    await edge_service.start()
    try:
        created = await admin_request(operator_session.nc, SUBJECTS, "tokens", "create", {"agent": "perm"})
        async with bearer(created["token"]) as http, Client(
                streamable_http_client(f"http://127.0.0.1:{port}/agents/perm/mcp", http_client=http),
                mode=LEGACY, cache=None, elicitation_callback=elicited) as client:
            result = await client.call_tool(TOOL, {})
        assert asked == ["your name?"]
        assert result.structured_content == {"result": {"action": "accept", "content": {"name": "Ada"}},
                                             "error": None}
        await edge_session.clean()
        await gateway.clean()
    finally:
        await edge_service.stop()
        await service.stop()
        for opened in (gateway, edge_session, operator_session):
            await opened.nc.close()


@pytest.mark.parametrize("user", [*OTHERS, "mcp-edge"])
async def test_only_the_gateway_asks_edge_clients_and_only_the_edge_hears_them(secure: SecureNats,
                                                                               user: str) -> None:
    other = await session(secure, user)
    ask, reply = SUBJECTS.edge_ask("edge-0123"), SUBJECTS.edge_client_reply("0123abcd")
    if user != "mcp-gateway":
        await other.nc.publish(ask, b"{}")
        await other.refused(ask)
    if user != "mcp-edge":
        await other.nc.publish(reply, b"{}")  # a forged client answer
        await other.refused(reply)
        await other.nc.subscribe(ask)  # answering in the edge's stead
        await other.refused(ask, action="subscription")
        await other.nc.subscribe(reply)  # reading clients' answers
        await other.refused(reply, action="subscription")
    await other.nc.close()
