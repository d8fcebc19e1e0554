"""A gateway and supervisor serving the echo app, and an agent bound to its tools."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from nats.aio.client import Client as NATS

from shared.contracts.agent import Agent
from shared.contracts.resource import canonical_json
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import agents_bucket, ensure_bucket
from tests.harness.stack import StackBuilder
from tests.integration.mcp_gateway.pool.helpers import AGENT, BOUND, REPO, Pool


@pytest.fixture
async def pool(nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path) -> AsyncIterator[Pool]:
    counter = tmp_path / "counter.jsonl"
    config = tmp_path / "apps.yml"
    config.write_text(yaml.safe_dump({"apps": {"echo": {
        "mcp": {"command": [sys.executable, str(REPO / "tests/apps/echo_app.py")],
                "env": {"ECHO_COUNTER_FILE": str(counter)}, "health_timeout_seconds": 15},
    }}}))
    async with StackBuilder(tmp_path).broker(nats_url).apps(config).supervisor().gateway().up():
        agents = await ensure_bucket(nc.jetstream(), agents_bucket(subjects))
        await agents.put(AGENT, canonical_json(Agent(id=AGENT, agent_kind="playbook", tools=BOUND)))
        client = Pool(nc, subjects)
        await client.wait_for_tools(*BOUND)
        yield client
