"""One running stack shared by the runner tests that do not kill anything: its own nats-server,
the event-bridge, the supervisor (chat, alarms, assets and echo apps), the gateway, the router
and two runners. Each test applies its own agents and bindings and tells its events apart by
`data.case`. Tests that kill runners start their own stack (`tests/e2e/test_runner_*`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from aurora_cli.localnats import LocalNats
from tests.fakes.openai_server import FakeOpenAI
from tests.harness.clients import nats_client
from tests.harness.processes import ServiceProcess, service_env, stop_services
from tests.integration.runner.helpers import RUNNER_ENV, stack_apps, write_apps


@dataclass
class Stack:
    url: str
    chat_log: Path
    processes: dict[str, ServiceProcess]
    fake: FakeOpenAI


def start_stack(folder: Path, *, runners: int, runner_env: dict[str, str] | None = None,
                env: dict[str, str] | None = None) -> tuple[LocalNats, dict[str, ServiceProcess], Path]:
    """`env`: more variables for every service (e.g. where to export traces)."""
    server = LocalNats(folder / "jetstream", log_file=folder / "nats-server.log")
    server.start()
    chat_log = folder / "chat-sent.jsonl"
    config = write_apps(folder, stack_apps(chat_log))
    env = service_env(server.url, AURORA_APPS_CONFIG=str(config), **(env or {}))
    logs = folder / "logs"
    logs.mkdir(exist_ok=True)
    processes = {
        "bridge": ServiceProcess("services.event_bridge", env, logs, "bridge").start(),
        "supervisor": ServiceProcess("services.app_supervisor", env, logs, "supervisor").start(),
        "gateway": ServiceProcess("services.mcp_gateway", env, logs, "gateway").start(),
        "router": ServiceProcess("services.router", env, logs, "router").start(),
    }
    for n in range(1, runners + 1):
        runner = {**env, **RUNNER_ENV, **(runner_env or {}), "AURORA_RUNNER_INSTANCE": f"runner-{n}"}
        processes[f"runner-{n}"] = ServiceProcess("services.runner", runner, logs, f"runner-{n}").start()
    return server, processes, chat_log


def stop_stack(server: LocalNats, processes: dict[str, ServiceProcess]) -> None:
    stop_services(processes.values())
    server.stop()


@pytest.fixture(scope="package")
def fake_openai() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture(scope="package")
def stack(tmp_path_factory: pytest.TempPathFactory, fake_openai: FakeOpenAI) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("runner-stack")
    server, processes, chat_log = start_stack(folder, runners=2)
    try:
        processes["gateway"].wait_for_log('"serving"', timeout=40)
        for name, process in processes.items():
            if name.startswith("runner"):
                process.wait_for_log('"ready"', timeout=30)
        processes["router"].wait_for_log('"ready"', timeout=30)
        yield Stack(server.url, chat_log, processes, fake_openai)
    finally:
        stop_stack(server, processes)


@pytest.fixture
async def snc(stack: Stack) -> AsyncIterator[NATS]:
    async with nats_client(stack.url) as client:
        yield client
