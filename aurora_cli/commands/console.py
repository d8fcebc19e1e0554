"""`aurora console`: a local web page for operators (see `aurora_cli/console/`)."""

from __future__ import annotations

from typing import Annotated

import typer

from aurora_cli.commands.pool_admin import operator
from aurora_cli.console.server import serve
from aurora_cli.output import run, settings_or_fail

DEFAULT_PORT = 8790  # the chat app's page has 8780


def register(app: typer.Typer) -> None:
    app.command("console")(console)


def console(
    host: Annotated[str, typer.Option(
        "--host", help="Address to listen on; loopback only unless --allow-remote.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: any free port).")]
    = DEFAULT_PORT,
    allow_remote: Annotated[bool, typer.Option(
        "--allow-remote", help="Allow a non-loopback --host. The console has no login and acts with your NATS "
                               "credentials: anyone who reaches the port can read every event and grant "
                               "approvals as you. Prefer an SSH tunnel.")] = False,
) -> None:
    """A web page for operators: live events, tasks, approvals, bindings, apps, tools and systems.

    Served with your own NATS credentials (the settings every command uses); approvals granted
    or denied on the page are recorded as decided by you."""
    run(serve(settings_or_fail(), host=host, port=port, allow_remote=allow_remote, operator=operator()))
