"""Each service's environment: what a program needs to run plus that service's own settings.

A launcher (`aurora dev`, the local cluster, the tests' harness) starts every service from the
shell's environment, which holds whatever the person exported: `OPENAI_API_KEY`, cloud tokens,
other projects' passwords. A service inherits none of it. It gets

- what any program needs (`PROCESS_ENV`: PATH, HOME, locale, TZ, TMPDIR, PYTHON*, VIRTUAL_ENV,
  the proxy and CA-bundle variables its HTTP clients honour),
- `NATS_*` and `OTEL_*` (the bus and the telemetry every service reads, shared/config/settings.py and
  shared/observability/trace_context.py), the `AURORA_*` settings every service reads (`COMMON_SETTINGS`) and its
  own (`SERVICE_SETTINGS`, read off its settings loader; `tests/unit/shared/config/test_service_env.py`
  checks that every variable a service's code names is passed to it),
- the variables it is declared to use: the gateway's secret allow-list
  (AURORA_GATEWAY_SECRET_ENV) and what apps/config.yml's `mcp.headers`/`mcp.url` reference; the
  supervisor's, what the apps' `mcp.env` references (it hands them to the apps); the runner's
  model key (the variable AURORA_MODEL_API_KEY_ENV names).

An allow-list, so a variable nobody declared is withheld without anyone remembering to.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from shared.config.appconfig import ENV_REFERENCE, load_apps_config
from shared.errors import AuroraError

# The gateway's secrets (services/mcp_gateway/systems/secrets.py): a folder, and variable names.
SECRETS_DIR_ENV = "AURORA_SECRETS_DIR"
SECRET_ENV_LIST = "AURORA_GATEWAY_SECRET_ENV"
PROCESS_ENV = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "TZ", "LANG", "LANGUAGE", "TERM",
               "VIRTUAL_ENV", "SYSTEMROOT")
PROCESS_PREFIXES = ("LC_", "PYTHON")
# httpx (OpenAPI fetches, HTTP systems, models) and the ssl module honour these.
NETWORK_ENV = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy",
               "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR")
PLATFORM_PREFIXES = ("NATS_", "OTEL_")
COMMON_SETTINGS = ("AURORA_APPS_CONFIG", "AURORA_EVENT_LOOP", "AURORA_LOG_LEVEL", "AURORA_METRICS_",
                   "AURORA_READY_FILE", "AURORA_STREAM_REPLICAS", "AURORA_SUBJECT_PREFIX", "AURORA_TRACEMALLOC",
                   "AURORA_TRACE_CONSOLE", "AURORA_SHUTDOWN_WAIT_SECONDS")
# Each service folder's own settings: a name, or a prefix (ending in `_`) of names.
SERVICE_SETTINGS: dict[str, tuple[str, ...]] = {
    "event_bridge": ("AURORA_BRIDGE_",),
    "app_supervisor": ("AURORA_RESTART_TIMEOUT_SECONDS", "AURORA_STOP_GRACE_SECONDS"),
    "mcp_gateway": ("AURORA_APPROVAL_", "AURORA_CALL_LEDGER_", "AURORA_ELICITATION_", "AURORA_LEDGER_",
                    "AURORA_OPENAPI_", "AURORA_SPECS_DIR", "AURORA_SECRETS_DIR", "AURORA_GATEWAY_"),
    "router": ("AURORA_ROUTER_",),
    "runner": ("AURORA_RUNNER_", "AURORA_MODEL", "AURORA_MODEL_"),
    "scheduler": ("AURORA_SCHEDULER_",),
    "mcp_edge": ("AURORA_EDGE_",),
    # The example HTTP apps `aurora dev` starts beside the services.
    "aurora_app_notes": ("AURORA_NOTES_",),
    "aurora_app_assets": ("AURORA_ASSETS_",),
}


def _named(key: str, names: Iterable[str]) -> bool:
    return any(key.startswith(name) if name.endswith("_") else key == name for name in names)


def process_variable(key: str) -> bool:
    """What any program needs to run, and nothing that is anybody's setting or secret."""
    return key in PROCESS_ENV or key in NETWORK_ENV or key.startswith(PROCESS_PREFIXES)


def own_settings(service: str) -> tuple[str, ...]:
    """The service's settings; a service not listed reads `AURORA_<NAME>_*`."""
    return SERVICE_SETTINGS.get(service, (f"AURORA_{service.upper()}_",))


def service_environment(service: str | None, base: Mapping[str, str], cwd: Path | None = None) -> dict[str, str]:
    """The part of `base` that `service` (a folder under services/; None: a process that is no
    service) may see. `cwd` is where it runs (AURORA_APPS_CONFIG is relative to it)."""
    names = (*COMMON_SETTINGS, *own_settings(service)) if service is not None else ()
    declared = set(declared_variables(service, base, cwd)) if service is not None else set()
    return {key: value for key, value in base.items()
            if process_variable(key) or key in declared
            or (service is not None and (key.startswith(PLATFORM_PREFIXES) or _named(key, names)))}


def declared_variables(service: str, base: Mapping[str, str], cwd: Path | None = None) -> list[str]:
    """The variables a service's settings say it uses, beyond its own settings."""
    if service == "mcp_gateway":
        listed = [n.strip() for n in base.get(SECRET_ENV_LIST, "").split(",") if n.strip()]
        return listed + _apps_references(base, cwd, "gateway")
    if service == "app_supervisor":
        return _apps_references(base, cwd, "supervisor")
    if service == "runner":
        key = base.get("AURORA_MODEL_API_KEY_ENV", "").strip()
        return [key] if key else []
    return []


def _apps_references(base: Mapping[str, str], cwd: Path | None, reader: str) -> list[str]:
    """`${NAME}`s in apps/config.yml: the gateway resolves `mcp.headers` and `mcp.url` (HTTP
    apps), the supervisor `mcp.env` (what it hands each stdio app)."""
    path = Path(base.get("AURORA_APPS_CONFIG") or "apps/config.yml")
    try:
        apps = load_apps_config(path if path.is_absolute() else Path(cwd or os.getcwd()) / path)
    except (AuroraError, OSError):
        return []  # the service itself fails on it at start-up, naming the file
    texts: list[str] = []
    for app in apps.apps.values():
        texts += [*app.mcp.headers.values(), app.mcp.url or ""] if reader == "gateway" else [*app.mcp.env.values()]
    return [match.group(1) for text in texts for match in ENV_REFERENCE.finditer(text)]
