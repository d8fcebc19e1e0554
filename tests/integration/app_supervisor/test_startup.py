"""Fail-fast start-up: a command that cannot be executed or a bad config stops the supervisor
before it spawns anything, with a message naming the app and the command; a good command
relative to `mcp.cwd` starts, and only stdio apps are the supervisor's business."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.processes import Spawn
from tests.integration.app_supervisor.helpers import (
    MODULE,
    PYTHON,
    RELAY_APP,
    Channels,
    app_entry,
    write_config,
)


def _fails(spawn: Spawn, config: Path) -> str:
    supervisor = spawn(MODULE, AURORA_APPS_CONFIG=str(config))
    code = supervisor.wait(timeout=15)
    supervisor.kill()  # closes the harness's log file (terminate() skips that for an exited process)
    assert code != 0
    return supervisor.logs()


@pytest.mark.parametrize("case", ["not_on_path", "not_executable", "missing_relative", "bad_cwd"])
async def test_a_command_that_cannot_run_fails_start_up_before_anything_spawns(
    case: str, spawn: Spawn, tmp_path: Path
) -> None:
    marker = tmp_path / "spawned"
    first = app_entry([PYTHON, "-c", f"open({str(marker)!r}, 'w').close(); import time; time.sleep(30)"])
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\nexec cat\n")
    script.chmod(0o644)
    broken = {
        "not_on_path": (app_entry(["aurora-no-such-program", "--serve"]),
                        "'aurora-no-such-program' not found on PATH"),
        "not_executable": (app_entry([str(script)]), f"'{script}' is not executable"),
        "missing_relative": (app_entry(["./missing.sh"], mcp={"cwd": str(tmp_path)}),
                             f"'./missing.sh' does not exist (relative to {tmp_path})"),
        "bad_cwd": (app_entry(["cat"], mcp={"cwd": str(tmp_path / "nowhere")}), "is not a directory"),
    }[case]
    config = write_config(tmp_path, {"first": first, "ghost": broken[0]})

    logs = _fails(spawn, config)

    assert broken[1] in logs
    assert "app=ghost" in logs and f"file={config}" in logs
    command = broken[0]["mcp"]["command"]
    assert f"command {command!r}" in logs or "mcp.cwd" in logs
    assert not marker.exists(), "nothing may be spawned before every command was checked"


async def test_a_config_error_names_file_app_and_field(spawn: Spawn, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"weather": {"mcp": {"command": ["cat"], "colour": "blue"}}})
    logs = _fails(spawn, config)
    assert "configuration error" in logs
    assert f"file={config}" in logs and "app=weather" in logs and "colour" in logs


async def test_an_env_reference_that_is_not_set_fails_start_up(spawn: Spawn, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"notes": app_entry(["cat"], mcp={"env": {"TOKEN": "${AURORA_TEST_UNSET}"}})})
    logs = _fails(spawn, config)
    assert "AURORA_TEST_UNSET" in logs and "app=notes" in logs and "mcp.env.TOKEN" in logs


async def test_a_command_relative_to_cwd_runs_there_and_http_apps_are_left_alone(
    nc: NATS, subjects: Subjects, spawn: Spawn, tmp_path: Path
) -> None:
    folder = tmp_path / "app"
    folder.mkdir()
    script = folder / "server.sh"
    script.write_text(f"#!/bin/sh\nexec {PYTHON} {RELAY_APP}\n")
    script.chmod(0o755)
    config = write_config(tmp_path, {
        "local": app_entry(["./server.sh"], package="test.local", mcp={"cwd": str(folder)}),
        "remote": {"package": "test.remote",
                   "mcp": {"transport": "streamable_http", "url": "http://127.0.0.1:9/mcp"}},
        "off": {**app_entry(["aurora-no-such-program"]), "enabled": False},
    })
    channels = await Channels(nc, subjects, "test.local").start()
    spawn(MODULE, AURORA_APPS_CONFIG=str(config))
    await channels.wait_state("started", 1)
    await channels.send(b'{"env":[]}')
    replies = await channels.wait(channels.replies, what="cwd reply")
    assert json.loads(replies[0])["cwd"] == str(folder)

    status = await admin_request(nc, subjects, "supervisor", "status")
    assert [s["name"] for s in status] == ["local"]
