"""Everything read and checked before the supervisor connects anywhere: the apps config, each
stdio app's command, and the supervisor's own timing settings. Fails fast with a ConfigError
naming the file, the app and the field."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from services.app_supervisor.config_check import launch_spec, stdio_apps
from services.app_supervisor.supervisor import SupervisedApp, SupervisorOptions
from shared.config.appconfig import load_apps_config
from shared.config.settings import read_float


def load_apps(path: Path, env: Mapping[str, str]) -> list[SupervisedApp]:
    config = load_apps_config(path)
    return [SupervisedApp(config=app, spec=launch_spec(app, env, source=config.source))
            for app in stdio_apps(config)]


@dataclass(frozen=True)
class SupervisorSettings:
    apps: list[SupervisedApp]
    options: SupervisorOptions


def load_options(env: Mapping[str, str]) -> SupervisorOptions:
    """`AURORA_SHUTDOWN_WAIT_SECONDS` (10), `AURORA_STOP_GRACE_SECONDS` (5),
    `AURORA_RESTART_TIMEOUT_SECONDS` (30)."""
    return SupervisorOptions(
        shutdown_wait_seconds=read_float(env, "AURORA_SHUTDOWN_WAIT_SECONDS", 10.0, minimum=0.0),
        stop_grace_seconds=read_float(env, "AURORA_STOP_GRACE_SECONDS", 5.0, minimum=0.0),
        restart_timeout_seconds=read_float(env, "AURORA_RESTART_TIMEOUT_SECONDS", 30.0, minimum=0.0),
    )


def load_app_supervisor_settings(apps_config: Path, env: Mapping[str, str] | None = None) -> SupervisorSettings:
    """The apps to supervise (their commands resolved now) and the supervisor's timings."""
    env = os.environ if env is None else env
    return SupervisorSettings(apps=load_apps(apps_config, env), options=load_options(env))
