"""Start-up checks of stdio apps' commands and environments (pure; uses tmp files only)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from services.app_supervisor.config_check import (
    STARTUP_ENV,
    CommandError,
    app_environment,
    launch_spec,
    launch_specs,
    resolve_program,
)
from shared.config.appconfig import AppsConfig, parse_apps_config
from shared.errors import ConfigError


def _executable(path: Path, mode: int = 0o755) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(mode)
    return path


def test_a_bare_name_is_looked_up_on_path(tmp_path: Path) -> None:
    tool = _executable(tmp_path / "my-server")
    assert resolve_program("my-server", cwd=None, path=str(tmp_path)) == str(tool)


def test_a_bare_name_not_on_path_is_not_found(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'my-server' not found on PATH"):
        resolve_program("my-server", cwd=str(tmp_path), path=str(tmp_path / "empty"))


def test_a_bare_name_on_path_without_x_bit_says_so(tmp_path: Path) -> None:
    _executable(tmp_path / "my-server", 0o644)
    with pytest.raises(ValueError, match=r"found at .*my-server but it is not executable"):
        resolve_program("my-server", cwd=None, path=str(tmp_path))


def test_a_relative_path_is_resolved_against_cwd(tmp_path: Path) -> None:
    (tmp_path / "bin").mkdir()
    tool = _executable(tmp_path / "bin" / "server.sh")
    assert resolve_program("bin/server.sh", cwd=str(tmp_path), path="") == str(tool)
    with pytest.raises(ValueError, match=r"'./nope.sh' does not exist \(relative to"):
        resolve_program("./nope.sh", cwd=str(tmp_path), path="")


def test_an_absolute_path_must_exist_be_a_file_and_be_executable(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        resolve_program(str(tmp_path / "missing"), cwd=None, path="")
    with pytest.raises(ValueError, match="is a directory"):
        resolve_program(str(tmp_path), cwd=None, path="")
    plain = _executable(tmp_path / "plain", 0o644)
    with pytest.raises(ValueError, match="is not executable"):
        resolve_program(str(plain), cwd=None, path="")


def _config(apps: dict[str, object]) -> AppsConfig:
    return parse_apps_config({"apps": apps}, source="apps.yml")


def test_launch_spec_names_file_app_and_command_on_failure() -> None:
    config = _config({"weather": {"mcp": {"command": ["aurora-no-such-program", "-x"]}}})
    with pytest.raises(CommandError) as error:
        launch_specs(config, {"PATH": "/nonexistent"})
    message = str(error.value)
    assert "command ['aurora-no-such-program', '-x'] cannot be executed" in message
    assert "file=apps.yml" in message and "app=weather" in message and "field=mcp.command" in message
    assert isinstance(error.value, ConfigError)


def test_only_enabled_stdio_apps_are_checked(tmp_path: Path) -> None:
    tool = _executable(tmp_path / "server")
    config = _config({
        "local": {"package": "im.local", "mcp": {"command": ["server", "--stdio"]}},
        "off": {"enabled": False, "mcp": {"command": ["missing"]}},
        "mcp_off": {"mcp": {"enabled": False, "command": ["missing"]}},
        "remote": {"mcp": {"transport": "streamable_http", "url": "http://x/mcp"}},
    })
    specs = launch_specs(config, {"PATH": str(tmp_path)})
    assert [(s.name, s.app_id, s.argv, s.program) for s in specs] == [
        ("local", "im.local", ("server", "--stdio"), str(tool))]


def test_the_app_env_is_merged_expanded_and_carries_startup() -> None:
    config = _config({"notes": {
        "startup": {"city": "北京", "n": 1},
        "mcp": {"command": ["sh"], "env": {"TOKEN": "Bearer ${SECRET}", "HOME": "/srv/notes"}},
    }})
    app = config.apps["notes"]
    base = {"SECRET": "s3", "HOME": "/root", "PATH": "/bin", "LC_ALL": "C.UTF-8", "PYTHONPATH": "/p",
            "NATS_PASSWORD": "pw", "NATS_CREDS": "/c", "NATS_CREDS_ENV_FILE": "/creds/app-supervisor.env",
            "AURORA_NATS_RUNNER_PASSWORD": "pw2", "AURORA_APPS_CONFIG": "apps/config.yml", "OPENAI_API_KEY": "k"}
    env = app_environment(app, base)
    assert env["TOKEN"] == "Bearer s3" and env["HOME"] == "/srv/notes"
    # Only the allow-list is inherited: no NATS or Aurora setting, no unrelated secret.
    assert set(env) == {"TOKEN", "HOME", "PATH", "LC_ALL", "PYTHONPATH", STARTUP_ENV}
    assert json.loads(env[STARTUP_ENV]) == {"city": "北京", "n": 1}


def test_an_unset_env_reference_names_app_and_field() -> None:
    config = _config({"notes": {"mcp": {"command": ["sh"], "env": {"TOKEN": "${NOPE_UNSET}"}}}})
    with pytest.raises(ConfigError, match=r"NOPE_UNSET.*app=notes, field=mcp.env.TOKEN"):
        launch_specs(config, {"PATH": os.defpath})


def test_a_missing_cwd_fails(tmp_path: Path) -> None:
    config = _config({"x": {"mcp": {"command": ["sh"], "cwd": str(tmp_path / "gone")}}})
    with pytest.raises(CommandError, match=r"is not a directory.*field=mcp\.cwd"):
        launch_spec(config.apps["x"], {"PATH": os.defpath})
