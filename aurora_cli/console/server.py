"""Serving the console: connect to NATS first (a wrong NATS_URL is one clear line, before any
port is taken), bind the socket (a port in use is one clear line too), then run uvicorn until
Ctrl-C."""

from __future__ import annotations

import socket

import uvicorn

from aurora_cli.console.guard import allowed_hosts, check_bind, is_loopback, new_token
from aurora_cli.console.platform import Link, Platform
from aurora_cli.console.routes import ConsoleConfig, console_app
from aurora_cli.output import CliError, note
from shared.settings import Settings

GRACE = 2  # seconds open event streams get to end on Ctrl-C


def bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host.strip("[]"), port))
    except OSError as exc:
        sock.close()
        raise CliError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); choose another --port") from exc
    sock.listen(128)
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> tuple[str, int, str]:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return host, port, f"http://{shown}:{port}/"


async def serve(settings: Settings, *, host: str, port: int, allow_remote: bool, operator: str) -> None:
    try:
        check_bind(host, allow_remote)
    except ValueError as exc:
        raise CliError(str(exc), exit_code=2) from exc
    link = Link(settings)
    await link.client()  # fail now, in one line, when NATS is not there
    try:
        sock = bind(host, port)
        bound_host, bound_port, url = url_of(sock)
        config = ConsoleConfig(token=new_token(), nats_url=settings.nats.url,
                               allowed_hosts=None if allow_remote else allowed_hosts(bound_host, bound_port))
        app = console_app(Platform(link, settings, operator=operator), config)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off",
                                               timeout_graceful_shutdown=GRACE))
        note(f"console serving {url} as operator {operator} (NATS {settings.nats.url}); Ctrl-C stops it")
        if not is_loopback(bound_host):
            note("warning: --allow-remote: anyone who reaches this port acts as you on the platform")
        await server.serve(sockets=[sock])
    finally:
        await link.close()
