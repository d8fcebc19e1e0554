"""Remote A2A agents in the tool pool: two agents of tests/apps/a2a_agent.py (the official SDK's
server classes), one answering `message/send` and polled, one streaming; a gateway and an
mcp-edge on a nats-server of their own. The polled agent wants a bearer token, which the gateway
reads from a variable declared to it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from aurora_cli.localnats import free_port
from tests.harness.ports import wait_listening
from tests.harness.stack import Stack, StackBuilder
from tests.integration.mcp_gateway.a2a.helpers import TOKEN, TOKEN_ENV, RemoteAgents

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="package")
def remote_agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RemoteAgents]:
    folder = tmp_path_factory.mktemp("a2a-agents")
    log = folder / "messages.jsonl"
    started: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        for extra in (["--token", TOKEN], ["--streaming"]):
            port = free_port("127.0.0.1")
            with (folder / f"agent-{port}.log").open("wb") as out:  # the child keeps its own descriptor
                process = subprocess.Popen([sys.executable, str(REPO / "tests/apps/a2a_agent.py"), "--port",
                                            str(port), *extra], cwd=REPO, env={**os.environ, "A2A_AGENT_LOG": str(log)},
                                           stdout=out, stderr=subprocess.STDOUT)
            started.append(process)
            wait_listening(process, port, "the A2A test agent", log=folder / f"agent-{port}.log", timeout=30)
            urls.append(f"http://127.0.0.1:{port}")
        yield RemoteAgents(urls[0], urls[1], log)
    finally:
        for process in started:
            process.terminate()
            process.wait(10)


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
