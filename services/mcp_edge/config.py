"""mcp-edge settings from the environment, validated before anything connects."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from shared.config.settings import read_float, read_int, read_optional, read_str, read_url
from shared.web_origin import OriginPolicy, parse_hosts, parse_origins

HOSTS_ENV = "AURORA_EDGE_ALLOWED_HOSTS"
ORIGINS_ENV = "AURORA_EDGE_ALLOWED_ORIGINS"


@dataclass(frozen=True)
class EdgeSettings:
    host: str = "127.0.0.1"
    port: int = 8795
    public_url: str | None = None  # the address clients use (behind a proxy / several instances)
    authorization_servers: tuple[str, ...] = ()
    approval_wait_seconds: float = 300.0  # how long a call needing approval is held
    call_timeout_seconds: float = 60.0
    refresh_seconds: float = 5.0  # how often the sets listened to are asked for again
    # Host headers answered besides loopback on the bound port and the public URL's (DNS rebinding);
    # origins of browser pages that may call, besides http:// of each of those hosts.
    allowed_hosts: frozenset[str] = frozenset()
    allowed_origins: frozenset[str] = frozenset()

    def origin_policy(self, bound_port: int) -> OriginPolicy:
        """Whom the edge answers: loopback on `bound_port`, the public URL's host, the settings'."""
        hosts, origins = set(self.allowed_hosts), set(self.allowed_origins)
        if self.public_url:
            public = urlsplit(self.public_url)
            default = 443 if public.scheme == "https" else 80
            hosts.add(public.netloc.lower() if public.port else f"{public.netloc.lower()}:{default}")
            hosts.add(public.netloc.lower())  # a browser leaves a default port out of Host
            origins.add(f"{public.scheme}://{public.netloc}".lower())
        return OriginPolicy.build(bound_port, hosts=hosts, origins=origins, hosts_setting=HOSTS_ENV,
                                  origins_setting=ORIGINS_ENV)


def load_edge_settings(env: Mapping[str, str] | None = None) -> EdgeSettings:
    """AURORA_EDGE_HOST, AURORA_EDGE_PORT, AURORA_EDGE_PUBLIC_URL, AURORA_EDGE_AUTHORIZATION_SERVERS
    (comma-separated URLs), AURORA_EDGE_APPROVAL_WAIT_SECONDS, AURORA_EDGE_CALL_TIMEOUT_SECONDS,
    AURORA_EDGE_REFRESH_SECONDS, AURORA_EDGE_ALLOWED_HOSTS (comma-separated host:port),
    AURORA_EDGE_ALLOWED_ORIGINS (comma-separated origins)."""
    env = os.environ if env is None else env
    servers = read_optional(env, "AURORA_EDGE_AUTHORIZATION_SERVERS") or ""
    return EdgeSettings(
        host=read_str(env, "AURORA_EDGE_HOST", "127.0.0.1"),
        port=read_int(env, "AURORA_EDGE_PORT", 8795, minimum=0, maximum=65535),
        public_url=read_url(env, "AURORA_EDGE_PUBLIC_URL"),
        authorization_servers=tuple(s.strip() for s in servers.split(",") if s.strip()),
        approval_wait_seconds=read_float(env, "AURORA_EDGE_APPROVAL_WAIT_SECONDS", 300.0, minimum=0.0),
        call_timeout_seconds=read_float(env, "AURORA_EDGE_CALL_TIMEOUT_SECONDS", 60.0, minimum=1.0),
        refresh_seconds=read_float(env, "AURORA_EDGE_REFRESH_SECONDS", 5.0, minimum=0.1),
        allowed_hosts=parse_hosts(HOSTS_ENV, env.get(HOSTS_ENV)),
        allowed_origins=parse_origins(ORIGINS_ENV, env.get(ORIGINS_ENV)),
    )
