"""Serving the console: check that NATS answers first (a wrong NATS_URL is one clear line, before
any port is taken), bind the socket (a port in use is one clear line too), then run uvicorn until
Ctrl-C. The console holds no NATS connection of its own: each person who signs in gets theirs."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import uvicorn

from aurora_cli.console.guard import allowed_hosts, check_bind, is_loopback
from aurora_cli.console.routes import ConsoleConfig, console_app
from aurora_cli.console.sessions import Sessions
from aurora_cli.output import CliError, note
from shared.config.settings import Settings

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


async def nats_info(url: str, timeout: float = 3.0) -> dict[str, Any]:
    """The first server of `url` that answers: its INFO (no identity is needed to read that)."""
    failures = []
    for part in url.split(","):
        where = urlsplit(part.strip())
        address = f"{where.hostname}:{where.port or 4222}"
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(where.hostname, where.port or 4222),
                                                    timeout)
        except OSError as exc:  # TimeoutError included
            failures.append(f"{address} ({exc.strerror or 'no answer'})")
            continue
        try:
            line = await asyncio.wait_for(reader.readline(), timeout)
        except OSError:
            line = b""
        finally:
            writer.close()
        head, _, body = line.decode(errors="replace").partition(" ")
        with contextlib.suppress(ValueError):
            info = json.loads(body)
            if head == "INFO" and isinstance(info, dict):
                return info
        failures.append(f"{address} (not a NATS server)")
    raise CliError(f"cannot reach NATS at {url}: {', '.join(failures)}; is the stack running (`make dev`) "
                   "and NATS_URL right?")


async def serve(settings: Settings, *, host: str, port: int, allow_remote: bool,
                your_file: Path | None = None) -> None:
    """`your_file`: the credentials file of whoever started the console, named in the first line."""
    try:
        check_bind(host, allow_remote)
    except ValueError as exc:
        raise CliError(str(exc), exit_code=2) from exc
    info = await nats_info(settings.nats.url)  # fail now, in one line, when NATS is not there
    async with Sessions(settings) as sessions:  # everyone signed out when the console stops
        sock = bind(host, port)
        bound_host, bound_port, url = url_of(sock)
        config = ConsoleConfig(nats_url=settings.nats.url,
                               allowed_hosts=None if allow_remote else allowed_hosts(bound_host, bound_port))
        server = uvicorn.Server(uvicorn.Config(console_app(sessions, config), log_level="warning", lifespan="off",
                                               timeout_graceful_shutdown=GRACE))
        yours = f"your credentials file {your_file}" if your_file else "your own credentials"
        note(f"console serving {url} (NATS {settings.nats.url}); sign in there with {yours}; Ctrl-C stops it")
        if not info.get("auth_required"):
            note(f"warning: the NATS server at {settings.nats.url} asks for no credentials: anyone can sign in "
                 "to the console under any name, as anyone can do anything on that server")
        if not is_loopback(bound_host):
            note("warning: --allow-remote: passwords typed into the sign-in form cross the network in plain HTTP")
        await server.serve(sockets=[sock])
