"""Where requests to mcp-edge may come from (the MCP Streamable HTTP transport: a server MUST
validate `Origin`, against DNS rebinding): a `Host` that is not the edge's own address, or a
browser page of another site, is answered 403 before any token is looked at; the official SDK
client, which sends no Origin, and the edge's own names work."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from nats.aio.client import Client as NATS

from tests.harness.stack import Stack
from tests.integration.mcp_edge.helpers import ECHO_TOOL, LEGACY, MODERN, agent, connected, token

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw-http", "version": "1"}}}


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
async def test_the_sdk_client_works_and_a_foreign_origin_is_refused(edge_stack: Stack, enc: NATS,
                                                                    mode: str) -> None:
    await agent(enc, "edge-origin", [ECHO_TOOL])
    created = await token(enc, "edge-origin")
    url = edge_stack.endpoint("edge-origin")
    async with connected(url, created["token"], mode) as client:  # no Origin: not a browser
        result = await client.call_tool(ECHO_TOOL, {"value": "from the SDK"})
        assert result.structured_content == {"value": "from the SDK"}

    evil = "http://evil-origin.example"
    headers = {"Authorization": f"Bearer {created['token']}", "Origin": evil}
    try:
        async with (create_mcp_http_client(headers=headers) as http,
                    Client(streamable_http_client(url, http_client=http), mode=mode, cache=None) as client):
            await client.call_tool(ECHO_TOOL, {"value": "from another site"})
    except BaseException as exc:  # the SDK raises the 403's JSON-RPC error from its task group
        refused = [e for e in leaves(exc) if isinstance(e, MCPError)]
    else:
        raise AssertionError("a client with another site's Origin was served")
    assert refused and f"Origin '{evil}' is not one of this server's pages" in str(refused[0]), refused


def leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


async def test_raw_requests_with_a_foreign_host_or_origin_get_403(edge_stack: Stack, enc: NATS) -> None:
    await agent(enc, "edge-rebind", [ECHO_TOOL])
    created = await token(enc, "edge-rebind")
    url = edge_stack.endpoint("edge-rebind")
    own = urlsplit(edge_stack.edge(0)).netloc
    port = own.rsplit(":", 1)[1]
    auth = {**ACCEPT, "Authorization": f"Bearer {created['token']}"}
    metadata = f"{edge_stack.edge(0)}/.well-known/oauth-protected-resource/agents/edge-rebind/mcp"
    async with httpx.AsyncClient(timeout=10) as http:
        for headers, reason in [({"Origin": "http://evil.example"}, "forbidden_origin"),
                                ({"Origin": "null"}, "forbidden_origin"),
                                ({"Host": f"evil.example:{port}"}, "forbidden_host"),
                                ({"Host": f"127.0.0.1:{int(port) + 1}"}, "forbidden_host")]:
            refused = await http.post(url, json=INITIALIZE, headers={**auth, **headers})
            assert refused.status_code == 403, (headers, refused.text)
            error = refused.json()["error"]
            assert error["data"] == {"reason": reason} and "AURORA_EDGE_ALLOWED_" in error["message"], error
            # discovery neither: it would hand a rebound page the token endpoint's address under its name
            assert (await http.get(metadata, headers=headers)).status_code == 403
        for host in (own, f"localhost:{port}", f"[::1]:{port}"):
            opened = await http.post(url, json=INITIALIZE, headers={**auth, "Host": host, "Origin": f"http://{host}"})
            assert opened.status_code == 200, (host, opened.text)
            assert opened.headers["mcp-session-id"]
        deep = await http.post(url, content=b"[" * 50_000 + b"]" * 50_000, headers=auth)
        assert deep.status_code == 400, deep.text  # not a 500: the body nests too deep to be an initialize
