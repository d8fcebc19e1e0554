"""Router settings from the environment, validated at start-up."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from services.router.router import RouterConfig
from shared.errors import ConfigError


@dataclass(frozen=True)
class RouterSettings:
    router: RouterConfig
    # The gateway's tool pool serves `amp.admin.agents.{apply,get,delete}`; a router can serve them
    # instead where no gateway runs (AURORA_ROUTER_SERVE_AGENTS=1, e.g. routing tried alone).
    # Never both: two services on one admin subject would share its requests.
    serve_agents: bool = False


def _int(env: Mapping[str, str], name: str, default: int, minimum: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ConfigError(f"{raw!r} is not an integer", field=name) from exc
    if value < minimum:
        raise ConfigError(f"must be at least {minimum}, not {value}", field=name)
    return value


def load_router_settings(env: Mapping[str, str] | None = None) -> RouterSettings:
    """AURORA_ROUTER_BATCH, AURORA_ROUTER_INLINE_LIMIT (bytes), AURORA_ROUTER_INSTANCE,
    AURORA_ROUTER_SERVE_AGENTS (1/0)."""
    env = os.environ if env is None else env
    serve = env.get("AURORA_ROUTER_SERVE_AGENTS", "0")
    if serve not in ("0", "1"):
        raise ConfigError(f"must be 0 or 1, not {serve!r}", field="AURORA_ROUTER_SERVE_AGENTS")
    config = RouterConfig(
        batch=_int(env, "AURORA_ROUTER_BATCH", 256, 1),
        inline_limit=_int(env, "AURORA_ROUTER_INLINE_LIMIT", 256 * 1024, 1024),
        instance=env.get("AURORA_ROUTER_INSTANCE") or f"{socket.gethostname()}-{os.getpid()}",
    )
    return RouterSettings(router=config, serve_agents=serve == "1")
