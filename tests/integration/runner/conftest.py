"""One running stack shared by the runner tests that do not kill anything (tests/harness/runner_stack.py):
its own nats-server, the event-bridge, the supervisor (chat, alarms, assets and echo apps), the
gateway, the router and two runners. Each test applies its own agents and bindings and tells its
events apart by `data.case`. Tests that kill runners start their own stack (`tests/e2e/test_runner_*`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from nats.aio.client import Client as NATS

from tests.fakes.openai_server import FakeOpenAI
from tests.harness.runner_stack import RunnerStack, chat_log_of, runner_stack


@pytest.fixture(scope="package")
def fake_openai() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory, fake_openai: FakeOpenAI) -> Iterator[RunnerStack]:
    folder = tmp_path_factory.mktemp("runner-stack")
    with runner_stack(folder, runners=2).running() as running:
        yield RunnerStack(running, chat_log_of(folder), fake_openai)


@pytest.fixture
async def snc(stack: RunnerStack) -> AsyncIterator[NATS]:
    async with stack.client() as client:
        yield client
