"""`aurora health` against the real five services: all up → exit 0 with every instance; a
runner stopped → exit 1 naming it, the rest still shown."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aurora_cli.localnats import LocalNats
from tests.harness.cli import Cli, cli_runner
from tests.harness.processes import ServiceProcess
from tests.harness.runner_stack import runner_stack
from tests.harness.stack import Stack
from tests.harness.waiting import poll_sync


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[Stack, dict[str, ServiceProcess]]]:
    with runner_stack(tmp_path, runners=2).running() as stack:
        yield stack, stack.processes


def _health(cli: Cli) -> tuple[int, dict[str, Any]]:
    result = cli("health", "--json", timeout=60)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def test_health_shows_every_instance_and_fails_when_a_service_is_gone(
        running: tuple[LocalNats, dict[str, ServiceProcess]]) -> None:
    server, processes = running
    cli = cli_runner(server.url)

    def all_up() -> tuple[int, dict[str, Any]] | None:
        # The apps' sessions come up a moment after the gateway says it serves.
        code, report = _health(cli)
        return (code, report) if code == 0 else None

    code, report = poll_sync(all_up, timeout=60, what="aurora health to report everything up")
    services = {row["name"]: row for row in report["services"]}
    assert services["aurora-runner"]["instances"] == 2, services["aurora-runner"]
    for name in ("aurora-app-supervisor", "aurora-mcp-gateway", "aurora-event-bridge", "aurora-router"):
        assert services[name]["instances"] == 1, services[name]
        assert services[name]["versions"] and services[name]["uptime_s"] is not None
    assert {a["app"] for a in report["apps"]} >= {"test.chat", "test.echo"}
    assert all(a["session"] == "connected" for a in report["apps"]), report["apps"]
    streams = {s["name"] for s in report["streams"]}
    assert {"AMP_SIGNALS", "AMP_EVENTS", "KV_AMP_RUN_RECORDS"} <= streams and "AMP_RUNS" not in streams
    assert report["problems"] == [] and isinstance(report["dead_letters"], int)

    processes["runner-1"].terminate()
    processes["runner-2"].terminate()
    code, report = _health(cli)
    assert code == 1
    assert "runner: no instance answers ($SRV.STATS)" in report["problems"], report["problems"]
    services = {row["name"]: row for row in report["services"]}
    assert services["aurora-runner"]["instances"] == 0 and services["aurora-router"]["instances"] == 1
    assert services["aurora-mcp-gateway"]["requests"] >= 1  # the earlier reports' `systems status`

    text = cli("health", timeout=60)
    assert text.returncode == 1
    assert "DOWN" in text.stdout and "runner: no instance answers" in text.stdout
