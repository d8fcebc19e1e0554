"""One stack for the edge tests: nats-server, the supervisor (echo app), the gateway and two
mcp-edge instances on their own ports (the same sessions through either). Each test applies
its own agent and creates its own tokens."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest
from nats.aio.client import Client as NATS

from aurora_cli.localnats import LocalNats, free_port
from tests.harness.clients import nats_client
from tests.harness.processes import ServiceProcess, service_env, stop_services
from tests.integration.runner.helpers import APPS, ECHO, stdio, write_apps

APPROVAL_WAIT = 20.0


@dataclass
class EdgeStack:
    url: str
    processes: dict[str, ServiceProcess]
    edges: tuple[str, str]  # the two instances' base URLs

    def endpoint(self, agent: str, instance: int = 0) -> str:
        return f"{self.edges[instance]}/agents/{agent}/mcp"


@pytest.fixture(scope="package")
def edge_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EdgeStack]:
    folder = tmp_path_factory.mktemp("edge-stack")
    server = LocalNats(folder / "jetstream", log_file=folder / "nats-server.log")
    server.start()
    counter = folder / "echo-counter.jsonl"
    apps = {"echo": stdio([sys.executable, str(APPS / "echo_app.py")], package=ECHO,
                          mcp={"env": {"ECHO_COUNTER_FILE": str(counter)}})}
    env = service_env(server.url, AURORA_APPS_CONFIG=str(write_apps(folder, apps)))
    logs = folder / "logs"
    logs.mkdir(exist_ok=True)
    ports = (free_port("127.0.0.1"), free_port("127.0.0.1"))
    processes = {
        "supervisor": ServiceProcess("services.app_supervisor", env, logs, "supervisor").start(),
        "gateway": ServiceProcess("services.mcp_gateway", env, logs, "gateway").start(),
    }
    try:
        processes["gateway"].wait_for_log('"serving"', timeout=60)
        for n, port in enumerate(ports):
            edge_env = {**env, "AURORA_EDGE_PORT": str(port), "AURORA_EDGE_REFRESH_SECONDS": "1",
                        "AURORA_EDGE_APPROVAL_WAIT_SECONDS": str(APPROVAL_WAIT)}
            processes[f"edge-{n}"] = ServiceProcess("services.mcp_edge", edge_env, logs, f"edge-{n}").start()
        for n in range(len(ports)):
            processes[f"edge-{n}"].wait_for_log('"serving"', timeout=30)
        yield EdgeStack(server.url, processes, (f"http://127.0.0.1:{ports[0]}", f"http://127.0.0.1:{ports[1]}"))
    finally:
        stop_services(processes.values())
        server.stop()


@pytest.fixture
async def enc(edge_stack: EdgeStack) -> AsyncIterator[NATS]:
    async with nats_client(edge_stack.url) as client:
        yield client


