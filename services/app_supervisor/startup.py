"""Everything read and checked before the supervisor connects anywhere: the apps config, each
stdio app's command, and the supervisor's own timing settings. Fails fast with a ConfigError
naming the file, the app and the field."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from services.app_supervisor.config_check import launch_spec, stdio_apps
from services.app_supervisor.supervisor import SupervisedApp, SupervisorOptions
from shared.appconfig import load_apps_config
from shared.errors import ConfigError


def load_apps(path: Path, env: Mapping[str, str]) -> list[SupervisedApp]:
    config = load_apps_config(path)
    return [SupervisedApp(config=app, spec=launch_spec(app, env, source=config.source))
            for app in stdio_apps(config)]


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ConfigError(f"{raw!r} is not a number of seconds", field=name) from exc
    if value < 0:
        raise ConfigError(f"{raw!r} must not be negative", field=name)
    return value


def load_options(env: Mapping[str, str]) -> SupervisorOptions:
    """`AURORA_SHUTDOWN_WAIT_SECONDS` (10), `AURORA_STOP_GRACE_SECONDS` (5),
    `AURORA_RESTART_TIMEOUT_SECONDS` (30)."""
    return SupervisorOptions(
        shutdown_wait_seconds=_seconds(env, "AURORA_SHUTDOWN_WAIT_SECONDS", 10.0),
        stop_grace_seconds=_seconds(env, "AURORA_STOP_GRACE_SECONDS", 5.0),
        restart_timeout_seconds=_seconds(env, "AURORA_RESTART_TIMEOUT_SECONDS", 30.0),
    )
