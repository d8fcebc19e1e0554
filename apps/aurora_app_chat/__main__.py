"""Run the chat app over stdio: `python -m apps.aurora_app_chat [--web-port N] [--web-host H]`
(startup JSON in AURORA_APP_STARTUP, side effects also appended to the JSONL file named by
CHAT_LOG_FILE when set).

The same process serves the chat page and its webhook on http://127.0.0.1:8780/ (`--web-port` /
CHAT_WEB_PORT: 0 = any free port, `off` = no page; `--web-host` / CHAT_WEB_HOST); the bound
address is logged on stderr (`chat page serving`). The page answers requests for loopback on
its port and for the `host:port` entries of AURORA_CHAT_ALLOWED_HOSTS (pages of the origins in
AURORA_CHAT_ALLOWED_ORIGINS too); callers other than the page sign their bodies with
AURORA_CHAT_WEBHOOK_SECRET (see `signature.py`).
"""

from __future__ import annotations

import argparse
import os
import sys

import anyio

from apps.common import load_startup
from apps.stdio import serve_stdio
from shared.config.settings import read_optional
from shared.errors import SettingsError
from shared.web_origin import parse_hosts, parse_origins

from .sent import SentLog
from .server import ChatApp
from .signature import SECRET_ENV, secret_problem
from .web import DEFAULT_HOST, DEFAULT_PORT, HOSTS_ENV, ORIGINS_ENV, PageSettings, open_page


def web_port(value: str) -> int | None:
    """A port number, 0 for any free port, None for `off`."""
    text = value.strip().lower()
    if text in ("off", "none", "no", "-1"):
        return None
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"the web port must be 0-65535 or off, not {value!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"the web port must be 0-65535 or off, not {value!r}")
    return port


def arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m apps.aurora_app_chat", description=__doc__.splitlines()[0])
    parser.add_argument("--web-port", type=web_port,
                        default=web_port(os.environ.get("CHAT_WEB_PORT") or str(DEFAULT_PORT)),
                        help=f"the chat page's port (default {DEFAULT_PORT}, 0 = any free port, off = no page)")
    parser.add_argument("--web-host", default=os.environ.get("CHAT_WEB_HOST") or DEFAULT_HOST,
                        help=f"the address the page listens on (default {DEFAULT_HOST})")
    return parser.parse_args(argv)


def page_settings(options: argparse.Namespace, env: dict[str, str]) -> PageSettings:
    """The page's settings; SystemExit naming the variable to fix."""
    secret = read_optional(env, SECRET_ENV)
    if (problem := secret_problem(secret)) is not None:
        raise SystemExit(problem)
    try:
        return PageSettings(options.web_host, options.web_port, parse_hosts(HOSTS_ENV, env.get(HOSTS_ENV)),
                            parse_origins(ORIGINS_ENV, env.get(ORIGINS_ENV)), secret)
    except SettingsError as exc:
        raise SystemExit(str(exc)) from None


async def main(argv: list[str]) -> None:
    try:
        options = arguments(argv)
    except argparse.ArgumentTypeError as exc:  # from the environment's default
        raise SystemExit(f"CHAT_WEB_PORT: {exc}") from None
    settings = page_settings(options, dict(os.environ))
    app = ChatApp(load_startup(), SentLog(os.environ.get("CHAT_LOG_FILE") or None))
    page = None if options.web_port is None else open_page(app, settings)
    async with anyio.create_task_group() as tg:
        if page is not None:
            tg.start_soon(page.run)
        await serve_stdio(app.server)
        if page is not None:  # stdin closed: the platform is gone, so is the page
            page.stop()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1:])
