"""Fixtures for the gateway's process tests.

`platform` is one running stack shared by the tests that only read from it (it takes a few
seconds to start): its own nats-server, the supervisor, the gateway and the event-bridge, with
the weather app, the third-party `mcp-server-time`, the echo app, an app that never answers
`initialize`, and the notes app over Streamable HTTP. Tests that kill or stop something start
their own stack with the harness's `spawn`.
"""

from __future__ import annotations

import contextlib
import subprocess
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from aurora_cli.localnats import LocalNats, free_port
from tests.harness.clients import nats_client
from tests.harness.ports import wait_listening
from tests.harness.processes import ServiceProcess, service_env, stop_services
from tests.harness.tcpproxy import TcpProxy
from tests.integration.mcp_gateway.helpers import (
    BRIDGE,
    GATEWAY,
    PYTHON,
    REPO,
    SILENT_APP,
    SUPERVISOR,
    Spawn,
    echo_app,
    logged,
    stdio,
    time_app,
    weather_app,
    write_apps,
)

SILENT_TIMEOUT = 1.0


@dataclass
class Platform:
    url: str
    config: Path
    supervisor: ServiceProcess
    gateway: ServiceProcess
    bridge: ServiceProcess


def _wait_http(url: str, port: int, process: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    wait_listening(process, port, "the notes app", timeout=timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"{url} did not answer within {timeout}s")


@contextlib.contextmanager
def serving_notes(folder: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """The notes example app served over Streamable HTTP on a free port (no supervisor); yields
    its MCP URL. Its output goes to `folder`/notes.log."""
    port = free_port()
    with (folder / "notes.log").open("wb") as log:
        process = subprocess.Popen(
            [PYTHON, "-m", "apps.aurora_app_notes", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_http(f"http://127.0.0.1:{port}/healthz", port, process)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            process.wait(10)


@pytest.fixture(scope="package")
def notes_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_notes(tmp_path_factory.mktemp("notes")) as url:
        yield url


@pytest.fixture(scope="package")
def platform(tmp_path_factory: pytest.TempPathFactory, notes_url: str) -> Iterator[Platform]:
    folder = tmp_path_factory.mktemp("platform")
    server = LocalNats(folder / "jetstream", log_file=folder / "nats-server.log")
    server.start()
    config = write_apps(folder, {
        "weather": weather_app(),
        "time": time_app(),
        "echo": echo_app(),
        "silent": stdio([PYTHON, str(SILENT_APP)], package="test.silent",
                        mcp={"health_timeout_seconds": SILENT_TIMEOUT}),
        "notes": {"package": "acme.notes", "mcp": {"transport": "streamable_http", "url": notes_url}},
    })
    env = service_env(server.url, AURORA_APPS_CONFIG=str(config))
    logs = folder / "logs"
    logs.mkdir()
    bridge = ServiceProcess(BRIDGE, env, logs, "bridge").start()
    supervisor = ServiceProcess(SUPERVISOR, env, logs, "supervisor").start()
    gateway = ServiceProcess(GATEWAY, env, logs, "gateway").start()
    try:
        gateway.wait_for_log('"serving"', timeout=30)
        bridge.wait_for_log('"started"', timeout=30)
        yield Platform(server.url, config, supervisor, gateway, bridge)
    finally:
        stop_services((gateway, supervisor, bridge))
        server.stop()


class Stack:
    """Supervisor and gateway processes of one test, stopped gateways first (as `aurora dev`
    does), so no supervisor waits for a session that nobody will close."""

    def __init__(self, spawn: Spawn) -> None:
        self._spawn = spawn
        self.processes: list[ServiceProcess] = []

    def supervisor(self, config: Path, **env: str) -> ServiceProcess:
        process = self._spawn(SUPERVISOR, tag="supervisor", AURORA_APPS_CONFIG=str(config), **env)
        self.processes.append(process)
        return process

    async def gateway(self, config: Path, tag: str = "gateway", *, serving: bool = True,
                      **env: str) -> ServiceProcess:
        process = self._spawn(GATEWAY, tag=tag, AURORA_APPS_CONFIG=str(config), **env)
        self.processes.append(process)
        if serving:
            await logged(process, '"serving"')
        return process

    def stop(self) -> None:
        stop_services(self.processes)


@pytest.fixture
def stack(spawn: Spawn) -> Iterator[Stack]:
    running = Stack(spawn)
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
async def pnc(platform: Platform) -> AsyncIterator[NATS]:
    """A client of the shared platform's nats-server."""
    async with nats_client(platform.url) as client:
        yield client


@pytest.fixture
def nats_proxy(nats_url: str) -> Iterator[TcpProxy]:
    """A proxy in front of the test's nats-server that can cut the network; asked for before
    `stack`, so it outlives the processes connected through it (a gateway stopping tells NATS)."""
    proxy = TcpProxy(int(nats_url.rsplit(":", 1)[1])).start()
    yield proxy
    proxy.stop()
