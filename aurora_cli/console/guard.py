"""Who may talk to the console. Pure functions; `routes.py` applies them to every request.

The console acts with the operator's NATS credentials and has no login of its own, so:
- it binds to loopback unless the operator says `--allow-remote` (then anyone who reaches the
  port acts as the operator);
- a request's `Host` must be the console's own address: another site's page that makes its
  name resolve to 127.0.0.1 (DNS rebinding) is refused, so it can read nothing;
- a POST must carry the page's random token in a header and, when the browser says where it
  comes from, an `Origin` of the console itself: a form or script on another site cannot
  grant an approval (a custom header needs a CORS preflight, which the console never allows).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets

TOKEN_HEADER = "x-aurora-console-token"
LOOPBACK_NAMES = ("localhost",)


class RemoteRefused(ValueError):
    """A non-loopback --host without --allow-remote."""


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or `localhost`; any other name or address (0.0.0.0 included) is not."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def check_bind(host: str, allow_remote: bool) -> None:
    if not allow_remote and not is_loopback(host):
        raise RemoteRefused(
            f"--host {host} is not a loopback address: the console acts with your NATS credentials and "
            "has no login, so anyone who reaches it could grant approvals as you; bind to 127.0.0.1 "
            "(and use an SSH tunnel), or pass --allow-remote if that is really what you want")


def new_token() -> str:
    return secrets.token_urlsafe(32)


def allowed_hosts(host: str, port: int) -> frozenset[str]:
    """The `Host` headers a browser sends for the console's own address."""
    names = {host.strip("[]").lower(), "localhost", "127.0.0.1", "[::1]"} if is_loopback(host) else {host.lower()}
    spelled = {f"[{n}]" if ":" in n and not n.startswith("[") else n for n in names}
    return frozenset(f"{name}:{port}" for name in spelled)


def host_problem(host_header: str | None, allowed: frozenset[str] | None) -> str | None:
    """Why this `Host` is refused (None: accepted). `allowed` None: any (`--allow-remote`)."""
    if allowed is None:
        return None
    if not host_header or host_header.lower() not in allowed:
        return f"Host {host_header!r} is not this console's address ({', '.join(sorted(allowed))})"
    return None


def post_problem(*, token: str | None, expected: str, origin: str | None, host_header: str | None) -> str | None:
    """Why this POST is refused (None: accepted)."""
    if origin is not None and origin.lower() not in (f"http://{(host_header or '').lower()}",):
        return f"Origin {origin!r} is not this console"
    if token is None or not hmac.compare_digest(token.encode(), expected.encode()):
        return f"missing or wrong {TOKEN_HEADER} header: reload the console page"
    return None
