"""`apps/config.yml`: which apps Aurora connects, and how. Read by the supervisor and the gateway.

The format is the seed's (`apps.<name>.enabled`, `startup`, `mcp.{enabled, transport, command,
env, health_timeout_seconds}`) plus `package` (the tool prefix and the app's id on the wire),
`instance`, `governance`, `mcp.{cwd, url, headers}` and a restart policy. Unknown keys and wrong
types are errors naming the file, the app and the field.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from shared.config import yamldocs
from shared.contracts.plain_json import size_problem
from shared.contracts.signals import PLATFORM_APP_PREFIX
from shared.contracts.subjects import app_token, check_unique_tokens
from shared.errors import ConfigError, SubjectError

# `${VAR}`, or `${VAR:-default}` (the default when VAR is unset or empty, as in the shell).
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
ENV_REFERENCE = _ENV_REF  # `${NAME}` / `${NAME:-default}`: group 1 is the variable's name
PACKAGE_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"


class _Strict(BaseModel):
    # No `.inf` / `.nan`: a timeout or backoff of infinity is a typo, never a setting.
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)


class FieldProblem(ValueError):
    """A check across fields that knows which field is wrong (pydantic only knows the model)."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


def _no_nul(value: str, what: str) -> None:
    # The OS refuses NUL in a program, an argument, a path or the environment: say so at
    # start-up, not as a failed spawn later.
    if "\x00" in value:
        raise ValueError(f"{what} {value[:60]!r} contains a NUL character")


class RestartPolicy(_Strict):
    backoff_initial_seconds: Annotated[float, Field(gt=0)] = 0.5
    backoff_max_seconds: Annotated[float, Field(gt=0)] = 30.0
    # A crash loop: more than `max_restarts` restarts within `window_seconds` → give up.
    max_restarts: Annotated[int, Field(ge=0)] = 5
    window_seconds: Annotated[float, Field(gt=0)] = 60.0


class McpConfig(_Strict):
    enabled: bool = True
    transport: Literal["stdio", "streamable_http"] = "stdio"
    command: list[str] | None = None
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = Field(default_factory=dict)
    # Which MCP generation to speak to a streamable_http app: `auto` asks `server/discover` and
    # falls back to the `initialize` handshake; `handshake` (2025-11-25 and earlier) and
    # `stateless` (2026-07-28) pin one. Stdio apps always use the handshake.
    protocol: Literal["auto", "handshake", "stateless"] = "auto"
    health_timeout_seconds: Annotated[float, Field(gt=0)] = 10.0
    call_timeout_seconds: Annotated[float, Field(gt=0)] = 30.0
    # The gateway pings a connected app this often (0: never); an app that does not answer within
    # health_timeout_seconds is hung, even if its process runs: its session is dropped and made again.
    ping_interval_seconds: Annotated[float, Field(ge=0)] = 30.0
    publish_resource_reads: bool = False
    # Tools of this app that deduplicate on the idempotency key the gateway passes in `_meta`
    # (`aurora/idempotency_key`): a call whose gateway died mid-call may be sent to them again.
    idempotency_key_tools: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _transport_fields(self) -> McpConfig:
        if self.enabled and self.transport == "stdio" and not self.command:
            raise FieldProblem("transport stdio needs mcp.command (a list: program and arguments)",
                               field="mcp.command")
        if self.enabled and self.transport == "streamable_http" and not self.url:
            raise FieldProblem("transport streamable_http needs mcp.url", field="mcp.url")
        if self.transport == "stdio" and self.protocol == "stateless":
            raise FieldProblem("protocol stateless (2026-07-28) is for streamable_http apps; a stdio app "
                               "speaks the handshake: use protocol auto or handshake", field="mcp.protocol")
        return self

    @field_validator("command")
    @classmethod
    def _command_is_executable(cls, value: list[str] | None) -> list[str] | None:
        for number, part in enumerate(value or []):
            _no_nul(part, "program" if number == 0 else f"argument {number}")
        return value

    @field_validator("cwd")
    @classmethod
    def _cwd_is_a_path(cls, value: str | None) -> str | None:
        if value is not None:
            _no_nul(value, "cwd")
        return value

    @field_validator("env")
    @classmethod
    def _env_is_settable(cls, value: dict[str, str]) -> dict[str, str]:
        for key, item in value.items():
            if not key or "=" in key:
                raise ValueError(f"environment variable name {key[:60]!r} must be non-empty, without '='")
            _no_nul(key, "environment variable name")
            _no_nul(item, f"the value of {key}")
        return value


# Platform capabilities an app may implement with one of its MCP tools (see `platform:`).
PLATFORM_CAPABILITIES = ("reply", "react", "respond_friend_request", "get_actor", "send_message")


class AppConfig(_Strict):
    name: str
    enabled: bool = True
    package: Annotated[str, Field(pattern=PACKAGE_PATTERN)] | None = None
    instance: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")] = "default"
    governance: Literal["auto", "review"] = "auto"
    startup: dict[str, Any] = Field(default_factory=dict)
    mcp: McpConfig = Field(default_factory=McpConfig)
    restart: RestartPolicy = Field(default_factory=RestartPolicy)
    # capability → the app's MCP tool implementing it, e.g. {reply: send_message}
    platform: dict[str, str] = Field(default_factory=dict)

    @field_validator("startup")
    @classmethod
    def _startup_is_json(cls, value: dict[str, Any]) -> dict[str, Any]:
        # It reaches the app as JSON (AURORA_APP_STARTUP): YAML's dates, sets, binary and
        # .nan/.inf have no JSON form.
        too_big = size_problem(value, max_values=10_000, max_depth=32)
        if too_big is not None:
            raise ValueError(f"{too_big[0]}: {too_big[1]}")
        try:
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"must be plain JSON data (quote dates and times): {exc}") from exc
        return value

    @field_validator("package")
    @classmethod
    def _not_a_platform_name(cls, value: str | None) -> str | None:
        # `aurora.*` names Aurora's own services: the bridge accepts platform events only from them.
        if value is not None and value.startswith(PLATFORM_APP_PREFIX):
            raise ValueError(f"packages starting with {PLATFORM_APP_PREFIX!r} are reserved for Aurora itself")
        return value

    @field_validator("platform")
    @classmethod
    def _known_capabilities(cls, value: dict[str, str]) -> dict[str, str]:
        unknown = sorted(set(value) - set(PLATFORM_CAPABILITIES))
        if unknown:
            raise ValueError(f"unknown platform capabilities {unknown}; known: {', '.join(PLATFORM_CAPABILITIES)}")
        return value

    @model_validator(mode="after")
    def _name_is_not_a_platform_name(self) -> AppConfig:
        if self.package is None and self.name.startswith(PLATFORM_APP_PREFIX):
            raise FieldProblem(f"app names starting with {PLATFORM_APP_PREFIX!r} are reserved for Aurora itself; "
                               "set a package", field="package")
        return self

    @property
    def app_id(self) -> str:
        """The app's identity on the wire and its tool prefix (defaults to its name)."""
        return self.package or self.name

    @property
    def is_stdio(self) -> bool:
        return self.mcp.enabled and self.mcp.transport == "stdio"


class AppsConfig(_Strict):
    apps: dict[str, AppConfig] = Field(default_factory=dict)
    source: str = "<memory>"

    def enabled(self) -> list[AppConfig]:
        return [app for app in self.apps.values() if app.enabled and app.mcp.enabled]

    def get(self, app_id: str) -> AppConfig | None:
        return next((a for a in self.apps.values() if a.app_id == app_id), None)


def expand_env(value: str, env: Mapping[str, str]) -> str:
    """`Bearer ${NOTES_TOKEN}` → the value from `env` (the environment a settings loader read);
    a missing one is an error. `${NOTES_URL:-http://127.0.0.1:8765/mcp}` falls back to the default
    when the variable is unset or empty (the default is taken literally; it is not expanded again)."""
    source = env

    def lookup(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if default is not None:
            return source.get(name) or default
        if name not in source:
            raise ConfigError(f"environment variable {name} is not set", field=name)
        return source[name]

    return _ENV_REF.sub(lookup, value)


def referenced_env(apps: AppsConfig, env: Mapping[str, str]) -> dict[str, str]:
    """The variables of `env` that the apps' `mcp.url` and `mcp.headers` reference, as a
    settings loader hands them to what connects to the apps (and learns them as secrets)."""
    names = {match.group(1) for app in apps.apps.values()
             for raw in [*app.mcp.headers.values(), app.mcp.url or ""] for match in _ENV_REF.finditer(raw)}
    return {name: env[name] for name in sorted(names) if name in env}


def load_apps_config(path: Path) -> AppsConfig:
    """Read and validate the file; every problem is a ConfigError naming file, app and field."""
    file = str(path)
    try:
        raw = yamldocs.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError("apps config file not found", file=file) from exc
    except OSError as exc:  # a directory, no permission …
        raise ConfigError(f"cannot read the apps config file: {exc.strerror or exc}", file=file) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8 text: {exc}", file=file) from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML: {exc}", file=file) from exc
    except RecursionError as exc:  # nesting that the bounded reader still let through
        raise ConfigError("not valid YAML: nested too deeply", file=file) from exc
    return parse_apps_config(raw, source=file)


def parse_apps_config(raw: Any, *, source: str = "<memory>") -> AppsConfig:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError("the top level must be a mapping with an `apps:` key", file=source)
    unknown = sorted(str(key) for key in raw if key != "apps")  # YAML keys need not be strings
    if unknown:
        raise ConfigError(f"unknown top-level key(s): {', '.join(unknown)}", file=source, field=unknown[0])
    apps_raw = raw.get("apps") or {}
    if not isinstance(apps_raw, dict):
        raise ConfigError("`apps` must be a mapping of app name to settings", file=source, field="apps")
    apps: dict[str, AppConfig] = {}
    for name, body in apps_raw.items():
        if not isinstance(body, dict):
            raise ConfigError("app settings must be a mapping", file=source, app=str(name))
        try:
            apps[str(name)] = AppConfig.model_validate({"name": str(name), **body})
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
            reasons = "; ".join(f"{_field_of(e) or '(app)'}: {e['msg']}" for e in errors)
            raise ConfigError(f"invalid app settings: {reasons}", file=source, app=str(name),
                              field=_field_of(errors[0]) or None) from exc
    config = AppsConfig(apps=apps, source=source)
    _check_identities(config)
    return config


def _field_of(error: Any) -> str:
    """The dotted field an error is about: its location, or the field a FieldProblem names."""
    problem = (error.get("ctx") or {}).get("error")
    if isinstance(problem, FieldProblem):
        return problem.field
    return ".".join(str(part) for part in error["loc"])


def _check_identities(config: AppsConfig) -> None:
    seen: dict[tuple[str, str], str] = {}
    for app in config.enabled():
        key = (app.app_id, app.instance)
        if key in seen:
            raise ConfigError(
                f"apps {seen[key]!r} and {app.name!r} both use package {app.app_id!r} "
                f"with instance {app.instance!r}",
                file=config.source, app=app.name, field="package",
            )
        seen[key] = app.name
        try:
            app_token(app.app_id)
        except SubjectError as exc:
            raise ConfigError(str(exc), file=config.source, app=app.name, field="package") from exc
    try:
        check_unique_tokens({app.app_id for app in config.enabled()})
    except Exception as exc:
        raise ConfigError(str(exc), file=config.source, field="package") from exc
