"""Router settings from the environment, validated at start-up."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from services.router.router import RouterConfig
from shared.config.settings import read_bool, read_int, read_optional


@dataclass(frozen=True)
class RouterSettings:
    router: RouterConfig
    # The gateway's tool pool serves `amp.admin.agents.{apply,get,delete}`; a router can serve them
    # instead where no gateway runs (AURORA_ROUTER_SERVE_AGENTS=1, e.g. routing tried alone).
    # Never both: two services on one admin subject would share its requests.
    serve_agents: bool = False


def load_router_settings(env: Mapping[str, str] | None = None) -> RouterSettings:
    """AURORA_ROUTER_BATCH, AURORA_ROUTER_INLINE_LIMIT (bytes), AURORA_ROUTER_INSTANCE,
    AURORA_ROUTER_SERVE_AGENTS (1/0)."""
    env = os.environ if env is None else env
    config = RouterConfig(
        batch=read_int(env, "AURORA_ROUTER_BATCH", 256, minimum=1),
        inline_limit=read_int(env, "AURORA_ROUTER_INLINE_LIMIT", 256 * 1024, minimum=1024),
        instance=read_optional(env, "AURORA_ROUTER_INSTANCE") or f"{socket.gethostname()}-{os.getpid()}",
    )
    return RouterSettings(router=config, serve_agents=read_bool(env, "AURORA_ROUTER_SERVE_AGENTS", False))
