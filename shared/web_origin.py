"""Where a request to one of Aurora's local web surfaces may come from (the chat page, mcp-edge).

A browser on the same machine is the risk these checks answer: another site's page can make its
own name resolve to 127.0.0.1 (DNS rebinding) and then read and post as if it were the page, or
post across sites. So every request's `Host` must be one of the surface's own addresses, and an
`Origin`, when a browser sends one, must be one of its own pages; anything else is answered 403
naming what was refused and the setting that widens the list. A request without `Origin` (a
script, the MCP SDK) is taken when its `Host` is allowed: Origin is how browsers say who asks,
and a browser always sends it on a cross-site request.

The allow-list defaults to loopback with the bound port (`localhost`, `127.0.0.1`, `[::1]`);
each surface's settings add to it (e.g. the address people type when a container publishes the
port). `GuardedApp` applies it to any ASGI app in front of everything else.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any

from shared.errors import SettingsError

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
# (reason code, message) → the JSON body of the 403 a surface answers
RefusalBody = Callable[[str, str], dict[str, Any]]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or `localhost`; any other name or address (0.0.0.0 included) is not."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def loopback_hosts(port: int) -> frozenset[str]:
    """The `Host` headers a browser sends for a loopback address on `port`."""
    return frozenset(f"{name}:{port}" for name in LOOPBACK_NAMES)


def parse_hosts(variable: str, text: str | None) -> frozenset[str]:
    """A comma-separated list of `host:port` (lower-cased; IPv6 in brackets); SettingsError names
    the variable when an entry is not one."""
    found: set[str] = set()
    for entry in (text or "").split(","):
        item = entry.strip().lower()
        if not item:
            continue
        name, sep, port = item.rpartition(":")
        if not sep or not name or not port.isdigit() or "/" in item or (":" in name and not name.startswith("[")):
            raise SettingsError(variable, text or "", "comma-separated host:port entries such as localhost:8780 "
                                "(IPv6 as [::1]:8780), no scheme or path")
        found.add(item)
    return frozenset(found)


def parse_origins(variable: str, text: str | None) -> frozenset[str]:
    """A comma-separated list of origins, `scheme://host[:port]` (lower-cased, no path)."""
    found: set[str] = set()
    for entry in (text or "").split(","):
        item = entry.strip().lower().rstrip("/")
        if not item:
            continue
        scheme, sep, rest = item.partition("://")
        if not sep or scheme not in ("http", "https") or not rest or "/" in rest:
            raise SettingsError(variable, text or "", "comma-separated origins such as http://localhost:8780 "
                                "(scheme, host and port; no path)")
        found.add(item)
    return frozenset(found)


@dataclass(frozen=True)
class OriginPolicy:
    """The hosts a surface answers for and the origins its pages have (http:// of each host,
    plus any configured)."""

    hosts: frozenset[str]
    origins: frozenset[str]
    hosts_setting: str  # the variable that adds hosts, named in every refusal
    origins_setting: str

    @classmethod
    def build(cls, port: int, *, hosts: Iterable[str] = (), origins: Iterable[str] = (),
              hosts_setting: str, origins_setting: str) -> OriginPolicy:
        allowed = loopback_hosts(port) | frozenset(h.lower() for h in hosts)
        pages = frozenset(f"http://{h}" for h in allowed) | frozenset(o.lower() for o in origins)
        return cls(allowed, pages, hosts_setting, origins_setting)

    def host_problem(self, host: str | None) -> str | None:
        """Why this `Host` is refused (None: it is one of ours)."""
        if host is None or host.lower() not in self.hosts:
            return (f"Host {host!r} is not an address of this server ({', '.join(sorted(self.hosts))}); "
                    f"add it to {self.hosts_setting} if people reach it by that name")
        return None

    def origin_problem(self, origin: str | None) -> str | None:
        """Why this `Origin` is refused (None: absent, or one of our pages)."""
        if origin is None or origin.lower().rstrip("/") in self.origins:
            return None
        return (f"Origin {origin!r} is not one of this server's pages; a page of another site may not call "
                f"it (add the origin to {self.origins_setting} if it should)")

    def problem(self, host: str | None, origin: str | None) -> tuple[str, str] | None:
        """(code, reason) of a refusal, None when the request may go on."""
        if (reason := self.host_problem(host)) is not None:
            return "forbidden_host", reason
        if (reason := self.origin_problem(origin)) is not None:
            return "forbidden_origin", reason
        return None


def header(scope: Scope, name: str) -> str | None:
    wanted = name.lower().encode()
    return next((v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == wanted), None)


def plain_refusal(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


class GuardedApp:
    """An ASGI app behind the policy: a refused request gets 403 and never reaches it."""

    def __init__(self, app: ASGIApp, policy: OriginPolicy, *, body: RefusalBody = plain_refusal,
                 on_refusal: Callable[[str, str], None] | None = None) -> None:
        self.app = app
        self.policy = policy
        self._body = body
        self._on_refusal = on_refusal

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refused = self.policy.problem(header(scope, "host"), header(scope, "origin"))
            if refused is not None:
                if self._on_refusal is not None:
                    self._on_refusal(*refused)
                data = json.dumps(self._body(*refused)).encode()
                await send({"type": "http.response.start", "status": 403, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
                await send({"type": "http.response.body", "body": data})
                return
        await self.app(scope, receive, send)
