"""One stack for the A2A tests: nats-server, the bridge, the supervisor (echo app), the gateway,
the router, two runners (so that "every runner restarted" means more than one) and an mcp-edge.
Each test applies its own playbook agent, its binding on `a2a.message.received` and its token."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from nats.aio.client import Client as NATS

from tests.harness.apps_config import echo_app
from tests.harness.runner_stack import RUNNER_ENV
from tests.harness.stack import Stack, StackBuilder


@pytest.fixture(scope="package")
def a2a_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("a2a-stack")
    apps = {"echo": echo_app(mcp={"env": {"ECHO_COUNTER_FILE": str(folder / "echo-counter.jsonl")}})}
    builder = StackBuilder(folder).apps(apps).bridge().supervisor().gateway().router().runners(2, **RUNNER_ENV) \
        .edges(1)
    with builder.running() as stack:
        yield stack


@pytest.fixture
async def anc(a2a_stack: Stack) -> AsyncIterator[NATS]:
    async with a2a_stack.client() as client:
        yield client
