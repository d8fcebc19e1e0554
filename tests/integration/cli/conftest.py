"""Run the real `aurora` CLI as a subprocess against the test's nats-server (tests/harness/cli.py)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.harness.cli import Cli, cli_runner, wait_for_bridge_consumer
from tests.harness.processes import ServiceProcess


@pytest.fixture
def cli(nats_url: str) -> Cli:
    """`cli("events", "tail", "--json")` → CompletedProcess (stdout, stderr, returncode)."""
    return cli_runner(nats_url)


@pytest.fixture
def bridge(spawn: Callable[..., ServiceProcess], cli: Cli) -> ServiceProcess:
    """A real `python -m services.event_bridge`, ready to consume signals."""
    process = spawn("services.event_bridge", tag="bridge")
    process.wait_ready()
    wait_for_bridge_consumer(cli)
    return process
