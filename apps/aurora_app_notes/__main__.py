"""Serve the notes app: `python -m apps.aurora_app_notes [--host H] [--port P]` (MCP endpoint at /mcp)."""

from __future__ import annotations

import argparse
import os

import uvicorn

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
    asgi = app.server.streamable_http_app(host=args.host)
    uvicorn.run(asgi, host=args.host, port=args.port, log_level=args.log_level)


if __name__ == "__main__":
    main()
