"""Remote A2A agents in the tool pool: two agents of tests/apps/a2a_agent.py (the official SDK's
server classes), one answering `message/send` and polled, one streaming, one of the HTTP+JSON
binding only; a gateway and an
mcp-edge on a nats-server of their own. The polled agent wants a bearer token, which the gateway
reads from a variable declared to it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from nats.aio.client import Client as NATS

from tests.harness.a2a_agents import a2a_agents
from tests.harness.stack import Stack, StackBuilder
from tests.integration.mcp_gateway.a2a.helpers import TOKEN, TOKEN_ENV, RemoteAgents


@pytest.fixture(scope="package")
def remote_agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RemoteAgents]:
    folder = tmp_path_factory.mktemp("a2a-agents")
    with a2a_agents(folder, ("--token", TOKEN), ("--streaming",), ("--rest",)) as (polled, streaming, rest):
        yield RemoteAgents(polled, streaming, rest, folder)


@pytest.fixture(scope="package")
def pool_stack(tmp_path_factory: pytest.TempPathFactory, remote_agents: RemoteAgents) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("a2a-pool")
    builder = StackBuilder(folder).apps({}).gateway(
        AURORA_GATEWAY_SECRET_ENV=TOKEN_ENV, **{TOKEN_ENV: TOKEN}).edges(1)
    with builder.running() as stack:
        yield stack


@pytest.fixture
async def pnc(pool_stack: Stack) -> AsyncIterator[NATS]:
    async with pool_stack.client() as client:
        yield client
