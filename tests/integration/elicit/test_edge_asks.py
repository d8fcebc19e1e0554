"""An app's requests during a call from an agent's MCP endpoint reach that MCP client: the official
SDK client (2025-11-25) calls an agent's tool on a real mcp-edge process, whose app (the elicit test
app, over stdio through the supervisor and the gateway) elicits or samples during the call; the
client's callback answers and the app's result says what it got. A client without the capability,
and a stateless 2026-07-28 client, get the request declined with the reason."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.client.client import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from nats.aio.client import Client as NATS

from aurora_cli.localnats import free_port
from tests.harness.stack import StackBuilder
from tests.integration.elicit.helpers import ELICIT, ElicitStack
from tests.integration.mcp_edge.helpers import LEGACY, MODERN, agent, audit_records, bearer, token

BOOK = f"{ELICIT}.book_table"
SUMMARIZE = f"{ELICIT}.summarize"


@pytest.fixture(scope="module")
def edges(stack: ElicitStack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """Two mcp-edge processes: the first one's base URL, the second one's port."""
    logs = tmp_path_factory.mktemp("edge-asks-logs")
    ports = (free_port("127.0.0.1"), free_port("127.0.0.1"))
    # Behind one load balancer both instances answer the name the client used: each allows the other's.
    hosts = ",".join(f"127.0.0.1:{port}" for port in ports)
    builder = StackBuilder(logs).broker(stack.url)
    for n, port in enumerate(ports):
        builder.service("edge", f"edge-{n}", AURORA_EDGE_PORT=str(port), AURORA_EDGE_ALLOWED_HOSTS=hosts)
    with builder.running():
        yield f"http://127.0.0.1:{ports[0]}", ports[1]


@pytest.fixture(scope="module")
def edge_url(edges: tuple[str, int]) -> str:
    return edges[0]


class AnswersElsewhere(httpx2.AsyncBaseTransport):
    """Sends the client's answers (JSON-RPC responses) to another instance than its calls, as a
    load balancer may."""

    def __init__(self, port: int) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._port = port
        self.rerouted = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "POST":
            body = json.loads(await request.aread() or b"null")
            if isinstance(body, dict) and "method" not in body and "id" in body:
                request.url = request.url.copy_with(port=self._port)
                self.rerouted += 1
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def _endpoint(snc: NATS, edge_url: str) -> tuple[str, str, str]:
    agent_id = f"edge-asker-{uuid.uuid4().hex[:6]}"
    await agent(snc, agent_id, [BOOK, SUMMARIZE])
    created = await token(snc, agent_id)
    return f"{edge_url}/agents/{agent_id}/mcp", str(created["token"]), str(created["id"])


async def _call(url: str, secret: str, tool: str, arguments: dict[str, Any], mode: str = LEGACY,
                **callbacks: Any) -> types.CallToolResult:
    async with bearer(secret) as http, Client(streamable_http_client(url, http_client=http), mode=mode,
                                              cache=None, **callbacks) as client:
        return await client.call_tool(tool, arguments)


async def test_the_clients_callback_answers_the_apps_elicitation(stack: ElicitStack, snc: NATS, edge_url: str) -> None:
    url, secret, token_id = await _endpoint(snc, edge_url)
    asked: list[types.ElicitRequestParams] = []

    async def answer(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        return types.ElicitResult(action="accept", content={"party_size": 3, "name": "Ada", "seating": "inside"})

    result = await _call(url, secret, BOOK, {"restaurant": "Lumen"}, elicitation_callback=answer)
    assert not result.is_error, result
    assert result.structured_content == {"action": "accept", "restaurant": "Lumen", "party_size": 3,
                                         "name": "Ada", "seating": "inside"}
    assert len(asked) == 1 and "Lumen" in asked[0].message
    assert isinstance(asked[0], types.ElicitRequestFormParams)
    assert "party_size" in asked[0].requested_schema["properties"]
    records = await _elicitations_of(snc, token_id)
    assert len(records) == 1, "the relayed elicitation is audited with the external caller"
    assert records[0]["status"] == "ok"


async def _elicitations_of(snc: NATS, token_id: str) -> list[dict[str, Any]]:
    return [r for r in await audit_records(snc)
            if r.get("tool") == "elicitation/create" and r.get("actor") == f"token:{token_id}"]


async def test_the_answer_reaches_the_call_through_another_instance(snc: NATS, edges: tuple[str, int]) -> None:
    url, secret, _ = await _endpoint(snc, edges[0])
    transport = AnswersElsewhere(edges[1])

    async def answer(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"party_size": 2, "name": "Bo", "seating": "outside"})

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, transport=transport,
                                  timeout=httpx2.Timeout(30, read=300)) as http, Client(
            streamable_http_client(url, http_client=http), mode=LEGACY, cache=None,
            elicitation_callback=answer) as client:
        result = await client.call_tool(BOOK, {"restaurant": "Quay"})
    assert transport.rerouted == 1
    assert result.structured_content == {"action": "accept", "restaurant": "Quay", "party_size": 2,
                                         "name": "Bo", "seating": "outside"}


async def test_a_client_without_the_capability_gets_a_declined_elicitation(snc: NATS, edge_url: str) -> None:
    url, secret, token_id = await _endpoint(snc, edge_url)
    result = await _call(url, secret, BOOK, {"restaurant": "Lumen"})
    assert not result.is_error, result
    assert result.structured_content == {"action": "decline", "restaurant": "Lumen"}
    records = await _elicitations_of(snc, token_id)
    assert len(records) == 1 and "did not declare the elicitation capability" in str(records[0])


async def test_a_stateless_client_gets_a_declined_elicitation_with_the_reason(snc: NATS, edge_url: str) -> None:
    url, secret, token_id = await _endpoint(snc, edge_url)
    result = await _call(url, secret, BOOK, {"restaurant": "Lumen"}, mode=MODERN)
    assert result.structured_content == {"action": "decline", "restaurant": "Lumen"}
    records = await _elicitations_of(snc, token_id)
    assert len(records) == 1 and "stateless (2026-07-28) MCP client" in str(records[0])


async def test_the_clients_model_answers_the_apps_sampling(snc: NATS, edge_url: str) -> None:
    url, secret, _ = await _endpoint(snc, edge_url)

    async def sample(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> (
            types.CreateMessageResult):
        text = params.messages[0].content
        said = text.text if isinstance(text, types.TextContent) else "?"
        return types.CreateMessageResult(role="assistant", model="client-model",
                                         content=types.TextContent(type="text", text=f"short: {said[:20]}"))

    result = await _call(url, secret, SUMMARIZE, {"text": "a long story"}, sampling_callback=sample)
    assert result.structured_content == {"sampled": True, "model": "client-model",
                                         "text": "short: Summarize: a long st"}, result
    refused = await _call(url, secret, SUMMARIZE, {"text": "a long story"})
    assert refused.structured_content is not None and refused.structured_content["sampled"] is False
    assert "did not declare the sampling capability" in refused.structured_content["error"]
