"""Shared fixtures: a real nats-server per test, a connected client, service processes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.broker import Broker, docker_reachable, start_broker
from tests.harness.clients import nats_client
from tests.harness.processes import ServiceProcess
from tests.harness.scheduling import PackageScheduling, handed_out_first
from tests.harness.stack import StackBuilder, kind_of_module

_USE_DOCKER = docker_reachable()
LOG_TAIL_CHARS = 3000


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> PackageScheduling | None:
    """With `--dist loadscope` (`make test`), packages that share one stack go to one worker
    whole (tests/harness/scheduling.py)."""
    return PackageScheduling(config, log) if config.getvalue("dist") == "loadscope" else None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The packages that share one stack run first (tests/harness/scheduling.py)."""
    order = handed_out_first([item.nodeid for item in items])
    items[:] = [items[index] for index in order]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    """A failed test's report ends with the last lines of every log in its temporary folder (its
    service processes' and its nats-server's), and in the `log_folder` of a fixture that has one
    (a stack shared by a module): a failure on a CI machine can then be read."""
    report: pytest.TestReport = yield
    if not report.failed:
        return report
    funcargs = getattr(item, "funcargs", {})
    folders = [funcargs.get("tmp_path"), *(getattr(value, "log_folder", None) for value in funcargs.values())]
    for folder in dict.fromkeys(f for f in folders if isinstance(f, Path)):
        for log in sorted(folder.rglob("*.log")):
            text = log.read_text(errors="replace")
            report.sections.append((f"log {log.relative_to(folder)} (last {LOG_TAIL_CHARS} chars)",
                                    text[-LOG_TAIL_CHARS:]))
    return report


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A fresh nats-server with JetStream and a temporary store, stopped after the test."""
    server = start_broker(tmp_path / "jetstream", tmp_path / "nats-server.log", use_docker=_USE_DOCKER)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def nats_url(broker: Broker) -> str:
    return broker.url


@pytest.fixture
async def nc(nats_url: str) -> AsyncIterator[NATS]:
    async with nats_client(nats_url, max_reconnect_attempts=-1, reconnect_time_wait=0.2) as client:
        yield client


@pytest.fixture
def subjects() -> Subjects:
    return Subjects("amp")


@pytest.fixture
def spawn(tmp_path: Path, nats_url: str) -> Iterator[object]:
    """`spawn("services.event_bridge", tag="bridge-1", **env)` starts a real service process (not
    waited for) in a stack on the test's broker (tests/harness/stack.py), stopped after the test."""
    with StackBuilder(tmp_path).broker(nats_url).running() as stack:

        def start(module: str, tag: str | None = None, **env: str) -> ServiceProcess:
            return stack.launch(kind_of_module(module), tag or module.replace(".", "_"), **env)

        yield start
