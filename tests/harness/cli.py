"""The real `aurora` CLI for tests: as a subprocess (the installed script) or in the test's own
process (tests/harness/cli_here.py), against a test's nats-server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.harness.cli_here import run_cli_here
from tests.harness.processes import REPO, service_env
from tests.harness.waiting import poll_sync

AURORA = Path(sys.executable).parent / "aurora"

Cli = Callable[..., subprocess.CompletedProcess[str]]


def cli_runner(nats_url: str) -> Cli:
    def run(*args: str, timeout: float = 30.0, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(AURORA), *args], env=service_env(nats_url, **env), cwd=REPO,
                              capture_output=True, text=True, timeout=timeout, check=False)
    return run


def cli_here_runner(nats_url: str) -> Cli:
    """The same commands run in the test's process (tests/harness/cli_here.py): for modules that
    make dozens of calls; the script itself is what `cli_runner` runs."""
    def run(*args: str, timeout: float = 30.0, **env: str) -> subprocess.CompletedProcess[str]:
        return run_cli_here(args, {"NATS_URL": nats_url, **env})
    return run


def aurora_command(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`aurora <args>` as a person types it: no NATS_ or AURORA_ setting of the test's own, a wide terminal."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NATS_", "AURORA_"))}
    env.update(NATS_URL=url, PYTHONIOENCODING="utf-8", COLUMNS="220")
    return subprocess.run([str(AURORA), *args], capture_output=True, text=True, env=env, timeout=60, cwd=REPO)


def streams_report(cli: Cli) -> dict[str, Any]:
    result = cli("streams", "--json")
    assert result.returncode == 0, result.stderr
    report: dict[str, Any] = json.loads(result.stdout)
    return report


def wait_for_bridge_consumer(cli: Cli, timeout: float = 20.0) -> dict[str, Any]:
    """Poll `aurora streams --json` until the bridge's durable consumer exists (it creates the
    streams and the consumer as it starts)."""

    def with_consumer() -> dict[str, Any] | None:
        report = streams_report(cli)
        streams = {s["name"]: s for s in report["streams"]}
        consumers = {c["name"] for c in streams.get("AMP_SIGNALS", {}).get("consumers", [])}
        return report if "event-bridge" in consumers else None

    return poll_sync(with_consumer, timeout=timeout, what="the event-bridge's consumer", interval=0.1)
