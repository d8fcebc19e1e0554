"""The platform's apps end to end: a missing command stops the supervisor's start-up with a
message naming the app and the command (the supervisor's own tests cover the variants)."""

from __future__ import annotations

from pathlib import Path

from tests.integration.mcp_gateway.helpers import SUPERVISOR, Spawn, echo_app, exited, stdio, write_apps


async def test_a_missing_command_fails_start_up_naming_the_app_and_the_command(spawn: Spawn, tmp_path: Path) -> None:
    config = write_apps(tmp_path, {
        "echo": echo_app(),
        "ghost": stdio(["aurora-no-such-mcp-server", "--stdio"], package="test.ghost"),
    })
    supervisor = spawn(SUPERVISOR, tag="supervisor", AURORA_APPS_CONFIG=str(config))

    assert await exited(supervisor, timeout=15) != 0
    logs = supervisor.logs()
    assert "app=ghost" in logs and "aurora-no-such-mcp-server" in logs, logs[-2000:]
    assert "not found" in logs, logs[-2000:]
    assert "app process started" not in logs
