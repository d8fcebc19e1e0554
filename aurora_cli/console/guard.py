"""Who may talk to the console. Pure functions; `routes.py` applies them to every request.

The console acts as the person signed in to it (sessions.py), so:
- it binds to loopback unless told `--allow-remote` (the sign-in then crosses the network in
  plain HTTP: use an SSH tunnel);
- a request's `Host` must be the console's own address: another site's page that makes its
  name resolve to 127.0.0.1 (DNS rebinding) is refused, so it can read nothing;
- every POST must say it comes from the console itself (`Origin`, which browsers send with
  every POST; a client that sends none is refused too) and be JSON (another site's form cannot
  send that without a CORS preflight, which the console never allows);
- every POST but the sign-in must also carry the session's token in a header: the token is
  only on the pages of a signed-in session, so a process or page without the session's
  cookie has nothing to send.
"""

from __future__ import annotations

import hmac
import ipaddress

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
            f"--host {host} is not a loopback address: people sign in to the console with their NATS "
            "passwords, which would cross the network in plain HTTP; bind to 127.0.0.1 (and use an SSH "
            "tunnel), or pass --allow-remote if that is really what you want")


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


def origin_problem(*, origin: str | None, host_header: str | None, content_type: str | None) -> str | None:
    """Why this POST is not the console's own page (None: it is)."""
    if origin is None:
        return "a POST without an Origin header: only the console's own page may change anything"
    if origin.lower() != f"http://{(host_header or '').lower()}":
        return f"Origin {origin!r} is not this console"
    if (content_type or "").split(";")[0].strip().lower() != "application/json":
        return "the request body must be JSON (Content-Type: application/json)"
    return None


def token_problem(token: str | None, expected: str | None) -> str | None:
    """Why this POST's session token is refused (None: accepted). `expected` None: no session."""
    if expected is None:
        return "not signed in: sign in on the console's page first"
    if token is None or not hmac.compare_digest(token.encode(), expected.encode()):
        return f"missing or wrong {TOKEN_HEADER} header: reload the console page"
    return None
