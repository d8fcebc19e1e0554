"""Who may use an agent's endpoint (bearer tokens, RFC 9728 discovery), and sessions that any
edge instance serves."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from nats.aio.client import Client as NATS

from shared.nats.admin_service import admin_request
from tests.harness.stack import Stack
from tests.integration.mcp_edge.helpers import ECHO_TOOL, LEGACY, SUBJECTS, agent, connected, token

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw-http", "version": "1"}}}


def message_of(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of a POST's answer, JSON or the last `data:` of an SSE stream."""
    if response.headers.get("content-type", "").startswith("application/json"):
        value: dict[str, Any] = response.json()
        return value
    data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
    value = json.loads(data[-1])
    return value


def tampered(token: str) -> str:
    """The token with its last character changed: always a different one (a fixed replacement
    would give the token itself back whenever it already ends in that character)."""
    return token[:-1] + ("B" if token.endswith("A") else "A")


async def test_no_bad_expired_or_revoked_token_gets_in(edge_stack: Stack, enc: NATS) -> None:
    await agent(enc, "edge-tokens", [ECHO_TOOL])
    await agent(enc, "edge-other", [ECHO_TOOL])
    url = edge_stack.endpoint("edge-tokens")
    good = await token(enc, "edge-tokens", name="good")
    short = await token(enc, "edge-tokens", expires="1s")
    revoked = await token(enc, "edge-tokens")
    other = await token(enc, "edge-other")
    await admin_request(enc, SUBJECTS, "tokens", "revoke", {"id": revoked["id"]})
    metadata = f"{edge_stack.edge(0)}/.well-known/oauth-protected-resource/agents/edge-tokens/mcp"
    await asyncio.sleep(1.2)  # the short token's lifetime, so that it has expired
    async with httpx.AsyncClient(timeout=10) as http:
        cases = {
            "none": ({}, 401, "bearer token is required"),
            "bad": ({"Authorization": "Bearer aet_0000000000000000_" + "x" * 43}, 401, "not valid"),
            "tampered": ({"Authorization": f"Bearer {tampered(good['token'])}"}, 401, "not valid"),
            "expired": ({"Authorization": f"Bearer {short['token']}"}, 401, "expired"),
            "revoked": ({"Authorization": f"Bearer {revoked['token']}"}, 401, "revoked"),
            "other agent": ({"Authorization": f"Bearer {other['token']}"}, 403, "not for agent"),
        }
        for case, (headers, status, words) in cases.items():
            response = await http.post(url, json=INITIALIZE, headers={**ACCEPT, **headers})
            assert response.status_code == status, (case, response.text)
            assert words in response.text, (case, response.text)
            assert f'resource_metadata="{metadata}"' in response.headers["www-authenticate"], case
        # a standard client follows the challenge to the resource's metadata (RFC 9728)
        document = (await http.get(metadata)).json()
        assert document["resource"] == url and document["bearer_methods_supported"] == ["header"]
        listed = await admin_request(enc, SUBJECTS, "tokens", "list", {"agent": "edge-tokens"})
    shown = {t["id"]: t for t in listed["tokens"]}
    assert shown[revoked["id"]]["revoked_at"] and shown[good["id"]]["name"] == "good"
    assert all("token" not in t and "sha256" not in t for t in listed["tokens"])  # the secret is shown once
    async with connected(url, good["token"], LEGACY) as client:  # the good one works
        assert [t.name for t in (await client.list_tools()).tools] == [ECHO_TOOL]


async def test_two_instances_serve_one_session(edge_stack: Stack, enc: NATS) -> None:
    await agent(enc, "edge-shared", [ECHO_TOOL])
    created = await token(enc, "edge-shared")
    auth = {**ACCEPT, "Authorization": f"Bearer {created['token']}"}
    on_a, on_b = edge_stack.endpoint("edge-shared", 0), edge_stack.endpoint("edge-shared", 1)
    async with httpx.AsyncClient(timeout=20) as http:
        opened = await http.post(on_a, json=INITIALIZE, headers=auth)
        assert opened.status_code == 200, opened.text
        result = message_of(opened)["result"]
        assert result["serverInfo"]["name"] == "aurora-mcp-edge"
        assert result["capabilities"]["tools"]["listChanged"] is True  # pushed on the GET stream
        session = {**auth, "Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await http.post(on_b, json=initialized, headers=session)).status_code == 202
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                "params": {"name": ECHO_TOOL, "arguments": {"value": "via B"}}}
        answered = await http.post(on_b, json=call, headers=session)
        assert answered.status_code == 200, answered.text
        assert message_of(answered)["result"]["structuredContent"] == {"value": "via B"}
        # another token may not use the session; an unknown session is 404 (initialize again)
        intruder = await token(enc, "edge-shared")
        stolen = await http.post(on_b, json=call, headers={**session, "Authorization": f"Bearer {intruder['token']}"})
        assert stolen.status_code == 403, stolen.text
        assert (await http.post(on_a, json=call, headers={**session, "Mcp-Session-Id": "0" * 32})).status_code == 404
        # ended on B, it is gone on A too
        assert (await http.delete(on_b, headers=session)).status_code == 200
        assert (await http.post(on_a, json=call, headers=session)).status_code == 404
