"""A gateway and supervisor serving the echo app, and an agent bound to its tools.

`pool` is one such stack per test module (starting one costs about three seconds of CPU: the
gateway, the supervisor and the echo app), for tests that keep to their own keys, tasks and call
ids; `private_pool` is a stack of the test's own, for a test that changes what every caller sees
(a system switched off, a tool deprecated)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import yaml
from nats.aio.client import Client as NATS

from shared.contracts.agent import Agent
from shared.contracts.resource import canonical_json
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import agents_bucket, ensure_bucket
from tests.harness.stack import Stack, StackBuilder
from tests.integration.mcp_gateway.pool.helpers import AGENT, BOUND, REPO, Pool


def _echo_apps(folder: Path) -> Path:
    config = folder / "apps.yml"
    config.write_text(yaml.safe_dump({"apps": {"echo": {
        "mcp": {"command": [sys.executable, str(REPO / "tests/apps/echo_app.py")],
                "env": {"ECHO_COUNTER_FILE": str(folder / "counter.jsonl")}, "health_timeout_seconds": 15},
    }}}))
    return config


async def _bound_pool(nc: NATS, subjects: Subjects) -> Pool:
    """The pool's client, once the agent is bound to the echo tools and the gateway lists them."""
    agents = await ensure_bucket(nc.jetstream(), agents_bucket(subjects))
    await agents.put(AGENT, canonical_json(Agent(id=AGENT, agent_kind="playbook", tools=BOUND)))
    client = Pool(nc, subjects)
    await client.wait_for_tools(*BOUND)
    return client


@pytest.fixture(scope="module")
def echo_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The module's stack, on a nats-server of its own."""
    folder = tmp_path_factory.mktemp("pool")
    with StackBuilder(folder).apps(_echo_apps(folder)).supervisor().gateway().running() as stack:
        yield stack


@pytest.fixture
async def pool(echo_stack: Stack, subjects: Subjects) -> AsyncIterator[Pool]:
    async with echo_stack.client() as nc:
        yield await _bound_pool(nc, subjects)


@pytest.fixture
async def private_pool(nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path) -> AsyncIterator[Pool]:
    async with StackBuilder(tmp_path).broker(nats_url).apps(_echo_apps(tmp_path)).supervisor().gateway().up():
        yield await _bound_pool(nc, subjects)
