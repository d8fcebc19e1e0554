"""`aurora console`: a local web page for operators (see `aurora_cli/console/`)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer

from aurora_cli.clienv import dev_data_dir, local_admin_file, serves
from aurora_cli.console.server import serve
from aurora_cli.output import note, run, settings_or_fail
from shared.config.settings import Settings

DEFAULT_PORT = 8790  # the chat app's page has 8780
EXIT_INTERRUPTED = 130  # as a shell reports a command Ctrl-C stopped


def register(app: typer.Typer) -> None:
    app.command("console")(console)


def console(
    host: Annotated[str, typer.Option(
        "--host", help="Address to listen on; loopback only unless --allow-remote.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port to listen on (0: any free port).")]
    = DEFAULT_PORT,
    allow_remote: Annotated[bool, typer.Option(
        "--allow-remote", help="Allow a non-loopback --host. The console speaks plain HTTP: the passwords "
                               "typed into its sign-in form would cross the network unencrypted. Prefer an "
                               "SSH tunnel.")] = False,
) -> None:
    """A web page for operators: live events, tasks, approvals, bindings, apps, tools and systems.

    Nothing shows until a person signs in on the page, with the credentials file `aurora users
    add` wrote for them (under `aurora dev`: var/dev/creds/users/<you>.env) or their name and
    password. The page then acts as that person, over a NATS connection of their own: approvals
    granted or denied there are decided by them, checked against their roles, and audited under
    their name. The shared `operator` identity cannot sign in. Sign-out closes the connection."""
    settings = settings_or_fail()
    ctrl_c = CtrlC()
    with ctrl_c.installed():
        try:
            run(serve(settings, host=host, port=port, allow_remote=allow_remote, your_file=your_credentials(settings)))
        finally:
            if ctrl_c.pressed:
                note("console stopped")
    if ctrl_c.pressed:
        raise typer.Exit(EXIT_INTERRUPTED)


class CtrlC:
    """Ctrl-C for the console, which stops quietly however the page was being used.

    While the server serves, uvicorn takes SIGINT and shuts down gracefully; then it raises the
    signal again for whoever handled it before (uvicorn/server.py, `capture_signals`). Left to
    `asyncio.run`, that cancelled the console's own shutdown half way (each signed-in page's NATS
    connection being drained) and printed a traceback. Installed here instead, the re-raised
    signal is only noted and the shutdown ends; a Ctrl-C before the server serves, or a second
    one while it stops, stops at once.
    """

    def __init__(self) -> None:
        self.pressed = False

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        previous = signal.signal(signal.SIGINT, self._handle)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        raised_again = frame is not None and frame.f_code.co_name == "capture_signals"
        already = self.pressed
        self.pressed = True
        if not raised_again or already:
            raise KeyboardInterrupt


def your_credentials(settings: Settings) -> Path | None:
    """The credentials file `aurora dev` issued for whoever runs it, when the console serves that
    stack: named at start so they know what to sign in with."""
    from aurora_cli.devsecurity import local_admin_name  # lazily: it pulls in bcrypt and TLS

    data_dir = dev_data_dir(os.environ)
    found = local_admin_file(data_dir, local_admin_name())
    return found if serves(data_dir, settings.nats.url) and found.is_file() else None
