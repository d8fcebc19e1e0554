"""Gateway settings: the apps config and the gateway's own timings, read before connecting."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from services.mcp_gateway.systems.limits import OpenApiLimits
from services.mcp_gateway.systems.secrets import DeclaredSecrets
from shared.config.appconfig import AppsConfig, load_apps_config, referenced_env
from shared.config.settings import read_float
from shared.jetstream.streams import CALL_LEDGER_TTL


@dataclass(frozen=True)
class GatewaySettings:
    apps: AppsConfig
    approval_ttl_seconds: float = 24 * 3600.0  # an approval nobody decides expires after this
    approval_sweep_seconds: float = 5.0  # how often undecided approvals are checked for expiry
    shutdown_wait_seconds: float = 10.0  # SIGTERM: how long calls in flight may take to finish
    openapi_limits: OpenApiLimits = field(default_factory=OpenApiLimits)  # bounds of one OpenAPI import
    call_ledger_ttl_seconds: float = CALL_LEDGER_TTL  # how long the ledger remembers a call
    ledger_heartbeat_seconds: float = 1.0  # how often this instance says it is alive (stale after 3x)
    # How long an app's `elicitation/create` waits for the user's answer in the chat (never
    # longer than the call's own timeout allows); then the app gets `cancel`.
    elicitation_timeout_seconds: float = 300.0
    # The secrets HTTP systems may name (AURORA_SECRETS_DIR, AURORA_GATEWAY_SECRET_ENV): http/secrets.py.
    secrets: DeclaredSecrets = field(default_factory=DeclaredSecrets)
    # The variables the apps' `mcp.url` and `mcp.headers` reference (`${VAR}`), read with the rest.
    apps_env: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)


def load_mcp_gateway_settings(apps_config: Path, env: Mapping[str, str] | None = None) -> GatewaySettings:
    """The apps config file, AURORA_APPROVAL_TTL_SECONDS (a day), AURORA_APPROVAL_SWEEP_SECONDS (5),
    AURORA_SHUTDOWN_WAIT_SECONDS (10), the OpenAPI import limits (`AURORA_OPENAPI_*`, `AURORA_SPECS_DIR`),
    AURORA_CALL_LEDGER_TTL_SECONDS (30 days, as long as tasks; changing it later is a bucket conflict),
    AURORA_LEDGER_HEARTBEAT_SECONDS (1), AURORA_ELICITATION_TIMEOUT_SECONDS (300); the secrets systems
    may name: AURORA_SECRETS_DIR (a folder) and AURORA_GATEWAY_SECRET_ENV (variable names, comma-separated);
    the variables the apps' `mcp.url` and `mcp.headers` reference."""
    env = os.environ if env is None else env
    apps = load_apps_config(apps_config)
    return GatewaySettings(
        apps=apps,
        apps_env=MappingProxyType(referenced_env(apps, env)),
        approval_ttl_seconds=read_float(env, "AURORA_APPROVAL_TTL_SECONDS", 24 * 3600.0, minimum=1.0),
        approval_sweep_seconds=read_float(env, "AURORA_APPROVAL_SWEEP_SECONDS", 5.0, minimum=0.1),
        shutdown_wait_seconds=read_float(env, "AURORA_SHUTDOWN_WAIT_SECONDS", 10.0, minimum=0.0),
        openapi_limits=OpenApiLimits.from_env(env),
        call_ledger_ttl_seconds=read_float(env, "AURORA_CALL_LEDGER_TTL_SECONDS", CALL_LEDGER_TTL, minimum=60.0),
        ledger_heartbeat_seconds=read_float(env, "AURORA_LEDGER_HEARTBEAT_SECONDS", 1.0, minimum=0.1, maximum=60.0),
        elicitation_timeout_seconds=read_float(env, "AURORA_ELICITATION_TIMEOUT_SECONDS", 300.0, minimum=0.1),
        secrets=DeclaredSecrets.from_env(env),
    )
