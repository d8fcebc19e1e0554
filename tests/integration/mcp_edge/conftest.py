"""One stack for the edge tests: nats-server, the supervisor (echo app), the gateway and two
mcp-edge instances on their own ports (the same sessions through either). Each test applies
its own agent and creates its own tokens."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from nats.aio.client import Client as NATS

from tests.harness.apps_config import echo_app
from tests.harness.stack import Stack, StackBuilder

APPROVAL_WAIT = 20.0


@pytest.fixture(scope="package")
def edge_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("edge-stack")
    apps = {"echo": echo_app(mcp={"env": {"ECHO_COUNTER_FILE": str(folder / "echo-counter.jsonl")}})}
    builder = StackBuilder(folder).apps(apps).supervisor().gateway().edges(
        2, AURORA_EDGE_REFRESH_SECONDS="1", AURORA_EDGE_APPROVAL_WAIT_SECONDS=str(APPROVAL_WAIT))
    with builder.running() as stack:
        yield stack


@pytest.fixture
async def enc(edge_stack: Stack) -> AsyncIterator[NATS]:
    async with edge_stack.client() as client:
        yield client
