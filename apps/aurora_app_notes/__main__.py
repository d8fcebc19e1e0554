"""Serve the notes app: `python -m apps.aurora_app_notes [--host H] [--port P]` (MCP endpoint at /mcp).

With AURORA_NOTES_TOKEN set, every request but /healthz needs `Authorization: Bearer <token>`
(the way a remote business app guards itself; Aurora sends it from `mcp.headers`)."""

from __future__ import annotations

import argparse
import hmac
import os

import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from apps.common import load_startup

from .server import NotesApp

DEFAULT_PORT = 8765


def main() -> None:
    startup = load_startup()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--host", default=os.environ.get("AURORA_NOTES_HOST") or startup.get("host") or "127.0.0.1"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=int(os.environ.get("AURORA_NOTES_PORT") or startup.get("port") or DEFAULT_PORT),
    )
    parser.add_argument(
        "--log-level", default=str(startup.get("http_log_level", "warning")).lower(), help="uvicorn log level"
    )
    args = parser.parse_args()

    app = NotesApp(startup)
    asgi: ASGIApp = app.server.streamable_http_app(host=args.host)
    token = os.environ.get("AURORA_NOTES_TOKEN")
    if token:
        asgi = require_bearer(asgi, token)
    # A 2026-07-28 client holds a subscriptions/listen stream open for as long as it lives: stop
    # without waiting for it to go (it connects again and lists again).
    uvicorn.run(asgi, host=args.host, port=args.port, log_level=args.log_level, timeout_graceful_shutdown=2)


def require_bearer(app: ASGIApp, token: str) -> ASGIApp:
    """Refuse (401) any HTTP request without the bearer token, /healthz excepted."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("path") != "/healthz":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
                return
        await app(scope, receive, send)

    return guarded


if __name__ == "__main__":
    main()
