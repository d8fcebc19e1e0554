"""`aurora dev`: the whole stack on this machine (embedded nats-server, every service), no Docker."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Annotated

import typer
from nats.errors import NoRespondersError

from aurora_cli import devseed
from aurora_cli.clienv import DEV_DIR, DEV_DIR_ENV
from aurora_cli.devpage import wait_for_chat_page
from aurora_cli.devsecurity import INSECURE_WARNING, LOCAL_ADMIN_ROLES, local_admin_name
from aurora_cli.devstack import DevStack
from aurora_cli.output import EXIT_USAGE, CliError, cli_errors, connected
from shared.config.settings import load_settings
from shared.nats.admin_service import admin_request

# The apps that emit events (the chat page, the industrial system's alarms) run under the
# app-supervisor: it starts once the demo is applied, so no event comes before the bindings
# that route it (one that did was routed `route_not_found` and never answered).
INGRESS = ("app_supervisor",)


def register(app: typer.Typer) -> None:
    app.command(name="dev")(dev)


def dev(
    data_dir: Annotated[Path, typer.Option(
        "--data-dir", envvar=DEV_DIR_ENV, help="JetStream store and logs live here; kept between runs. "
        "Other aurora commands find the credentials kept here by themselves when it is the default folder "
        f"or {DEV_DIR_ENV} names it.")] = DEV_DIR,
    port: Annotated[int, typer.Option("--port", min=1, max=65535, help="NATS client port.")] = 4222,
    notes_port: Annotated[int, typer.Option(
        "--notes-port", min=1, max=65535, help="Port of the example notes app (Streamable HTTP).")] = 8765,
    assets_port: Annotated[int, typer.Option(
        "--assets-port", min=1, max=65535, help="Port of the demo's asset register (an HTTP system).")] = 8766,
    insecure: Annotated[bool, typer.Option(
        "--insecure", help="Run nats-server with no users or permissions (loudly warned). By default every "
        "service has its own user from deploy/nats-auth.conf, credentials kept in <data-dir>/creds/.")] = False,
    tls: Annotated[bool, typer.Option(
        "--tls", help="Serve NATS over TLS with a local CA made in <data-dir>/tls/; every service and the CLI "
        "verify the server against it (NATS_TLS_CA).")] = False,
    secure: Annotated[bool, typer.Option(
        "--secure", hidden=True, help="Accepted for compatibility: secure is the default.")] = False,
    cluster: Annotated[int, typer.Option(
        "--cluster", min=1, max=7, help="Run N clustered nats-servers (client ports --port … --port+N-1, routes on "
        "loopback with their own password); every stream and bucket gets min(N, 3) replicas "
        "(AURORA_STREAM_REPLICAS overrides).")] = 1,
    demo: Annotated[bool, typer.Option(
        "--demo/--no-demo", help="Apply deploy/demo/ (the asset register's reviewed tools; the agents and "
        "bindings that do not exist yet), so an emitted chat message is routed and answered at once.")] = True,
) -> None:
    """Run nats-server and every service until Ctrl-C; logs go to the terminal and <data-dir>/logs/."""
    with cli_errors():
        if secure and insecure:
            raise CliError("--secure and --insecure contradict each other (secure is the default)",
                           exit_code=EXIT_USAGE)
        stack = DevStack(data_dir, port=port, notes_port=notes_port, assets_port=assets_port, insecure=insecure,
                         tls=tls, cluster=cluster)
    stop = threading.Event()
    force = threading.Event()

    def on_signal(signum: int, _: FrameType | None) -> None:
        if stop.is_set():  # a second Ctrl-C: do not wait for graceful shutdowns
            force.set()
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with cli_errors():
            stack.start(stop, hold=INGRESS if demo else ())
        if not stop.is_set():
            if not stack.insecure:
                register_local_admin(stack)
            demo_line = _seed_demo(stack) if demo else None
            stack.start_held(stop)
            if demo and (page := stack.own_chat_page()) is not None:
                wait_for_chat_page(page, stop, stack.alert)
            stack.console.print(stack.banner(_aurora_command(), demo=demo_line), markup=False)
            stack.wait(stop)
    finally:
        stack.stop(force=force.is_set())
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if stack.insecure:
        stack.alert(INSECURE_WARNING)
    if stack.unexpected_exits:
        stack.alert(f"stopped; these exited on their own while running: {', '.join(stack.unexpected_exits)}")
        raise typer.Exit(1)
    stack.console.print("Aurora dev stack stopped.", markup=False)


def register_local_admin(stack: DevStack) -> None:
    """Put the local admin `aurora dev` issued into the users registry (as the installation's
    `operator` identity: the registry is empty at the first start); idempotent."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}
    env.update(stack.client_env("operator"))
    body = {"name": local_admin_name(), "roles": list(LOCAL_ADMIN_ROLES)}

    async def register() -> None:
        settings = load_settings(env)
        async with connected(settings.nats) as nc:
            for _ in range(60):  # a service says "started" before it serves: wait for the gateway
                try:
                    await admin_request(nc, settings.subjects, "users", "add", body, timeout=10)
                    return
                except NoRespondersError:
                    await asyncio.sleep(0.5)
            await admin_request(nc, settings.subjects, "users", "add", body, timeout=10)

    try:
        asyncio.run(register())
    except Exception as exc:  # the stack is up all the same; say why the CLI's person is not
        stack.alert(f"the local admin {body['name']!r} was not registered: {exc}")


def _seed_demo(stack: DevStack) -> str:
    """Create the demo's missing resources; the banner's line about them (or why not)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NATS_")}
    env.update(stack.client_env("operator"))
    try:
        seeded = asyncio.run(devseed.seed(load_settings(env), devseed.demo_documents(with_llm=devseed.has_model(env)),
                                          env=env))
    except Exception as exc:  # the stack is up all the same; say why the demo is not
        stack.alert(f"the demo's agents and bindings were not applied: {exc}")
        return "not applied (see above); `aurora apply -f deploy/demo/` adds them"
    names = ", ".join(seeded.created + seeded.kept)
    return f"{names} ({len(seeded.created)} created, {len(seeded.kept)} already there; deploy/demo/)"


def _aurora_command() -> str:
    """How to call the CLI from here: the venv's `aurora`, relative when it is below the cwd."""
    beside = Path(sys.executable).parent / "aurora"
    if not beside.exists():
        return "aurora"
    try:
        return str(beside.relative_to(Path.cwd()))
    except ValueError:
        return str(beside)
