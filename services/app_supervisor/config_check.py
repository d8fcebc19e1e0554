"""Pure start-up checks: turn each enabled stdio app's config into what is needed to launch it.

Everything that can be known before spawning is checked here, so a bad command fails start-up
(naming the app and the command) before any process exists.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from shared.config.appconfig import AppConfig, AppsConfig, expand_env
from shared.errors import ConfigError

STARTUP_ENV = "AURORA_APP_STARTUP"
# An app inherits only what a program needs to run (an allow-list: a new platform variable is
# withheld without anyone remembering to): never NATS_* or AURORA_* settings, whose values or
# paths lead to the platform's credentials. What else an app needs, its own `mcp.env` says.
INHERITED_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LANGUAGE", "TERM",
                 "VIRTUAL_ENV", "SYSTEMROOT")
INHERITED_PREFIXES = ("LC_", "PYTHON")


def inherited(key: str) -> bool:
    return key in INHERITED_ENV or key.startswith(INHERITED_PREFIXES)


class CommandError(ConfigError):
    """An enabled app's command cannot be executed (not found, not executable, bad cwd)."""


@dataclass(frozen=True)
class LaunchSpec:
    """Everything needed to start one app's process; built once, at start-up."""

    name: str
    app_id: str
    instance: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None
    program: str  # argv[0] resolved to the file that will be executed


def resolve_program(program: str, *, cwd: str | None, path: str | None) -> str:
    """The executable file `program` names, the way exec would find it; raises ValueError
    with the reason when there is none."""
    try:
        return _resolve(program, cwd=cwd, path=path)
    except OSError as exc:  # e.g. a name longer than the file system allows
        raise ValueError(f"{program[:80]!r} cannot be looked up: {exc.strerror or exc}") from exc


def _resolve(program: str, *, cwd: str | None, path: str | None) -> str:
    if os.sep in program or (os.altsep and os.altsep in program):
        candidate = Path(program)
        if not candidate.is_absolute():
            candidate = Path(cwd or os.getcwd()) / candidate
        if not candidate.exists():
            where = f" (relative to {cwd or os.getcwd()})" if not Path(program).is_absolute() else ""
            raise ValueError(f"{program!r} does not exist{where}")
        if candidate.is_dir():
            raise ValueError(f"{program!r} is a directory")
        if not os.access(candidate, os.X_OK):
            raise ValueError(f"{program!r} is not executable")
        return str(candidate)
    found = shutil.which(program, path=path)
    if found:
        return found
    for folder in (path or "").split(os.pathsep):
        candidate = Path(folder or ".") / program
        if candidate.is_file():
            raise ValueError(f"{program!r} found at {candidate} but it is not executable")
    raise ValueError(f"{program!r} not found on PATH")


def app_environment(app: AppConfig, base: Mapping[str, str], *, source: str | None = None
                    ) -> dict[str, str]:
    """The allow-listed part of the supervisor's environment (`inherited`), `mcp.env` over it with
    `${VAR}` expanded from `base`, and `AURORA_APP_STARTUP` = the app's `startup` as JSON."""
    env = {key: value for key, value in base.items() if inherited(key)}
    for key, value in app.mcp.env.items():
        try:
            env[key] = expand_env(value, dict(base))
        except ConfigError as exc:
            raise ConfigError(f"mcp.env.{key} refers to ${{{exc.field}}}, which is not set",
                              file=source, app=app.name, field=f"mcp.env.{key}") from exc
    env[STARTUP_ENV] = json.dumps(app.startup, ensure_ascii=False, separators=(",", ":"))
    return env


def launch_spec(app: AppConfig, base_env: Mapping[str, str], *, source: str | None = None) -> LaunchSpec:
    """Check one stdio app's command and build its launch spec; a CommandError names the
    file, the app and the command."""
    command = list(app.mcp.command or [])
    if not command:
        raise CommandError("mcp.command is empty", file=source, app=app.name, field="mcp.command")
    cwd = app.mcp.cwd
    if cwd is not None and not _is_dir(cwd):
        raise CommandError(f"mcp.cwd {cwd!r} is not a directory (command {command!r})",
                           file=source, app=app.name, field="mcp.cwd")
    env = app_environment(app, base_env, source=source)
    try:
        program = resolve_program(command[0], cwd=cwd, path=env.get("PATH", os.defpath))
    except ValueError as exc:
        raise CommandError(f"command {command!r} cannot be executed: {exc}",
                           file=source, app=app.name, field="mcp.command") from exc
    return LaunchSpec(name=app.name, app_id=app.app_id, instance=app.instance, argv=tuple(command),
                      env=env, cwd=cwd, program=program)


def _is_dir(path: str) -> bool:
    try:
        return Path(path).is_dir()
    except OSError:  # a path longer than the file system allows is no directory either
        return False


def stdio_apps(config: AppsConfig) -> list[AppConfig]:
    """The apps the supervisor owns: enabled, MCP enabled, transport stdio."""
    return [app for app in config.enabled() if app.is_stdio]


def launch_specs(config: AppsConfig, base_env: Mapping[str, str]) -> list[LaunchSpec]:
    """Launch specs for every app the supervisor owns; the first problem fails them all."""
    return [launch_spec(app, base_env, source=config.source) for app in stdio_apps(config)]
