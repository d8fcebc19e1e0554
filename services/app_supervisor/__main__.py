"""Composition root of the app-supervisor: `python -m services.app_supervisor`."""

from __future__ import annotations

import asyncio
import os
import sys
from functools import partial

from nats.aio.client import Client as NATS
from nats.micro.service import Service

from services.app_supervisor.admin import serve_admin
from services.app_supervisor.startup import load_apps, load_options
from services.app_supervisor.supervisor import SupervisedApp, Supervisor, SupervisorOptions
from shared.errors import AuroraError
from shared.service import run_service
from shared.settings import Settings, load_settings

NAME = "app-supervisor"


async def main(apps: list[SupervisedApp], options: SupervisorOptions, settings: Settings,
               nc: NATS, stop: asyncio.Event) -> None:
    supervisor = Supervisor(nc, settings.subjects, apps, options)
    admin: Service | None = None
    try:
        await supervisor.start()
        admin = await serve_admin(nc, settings.subjects, supervisor)
        await stop.wait()
    finally:
        await supervisor.shutdown()  # `status` still answers while apps are being stopped
        if admin is not None:
            await admin.stop()


def run() -> None:
    # Checked before connecting to NATS: a bad config or command fails at once, even when
    # NATS is not reachable yet, and nothing has been spawned.
    try:
        settings = load_settings()
        apps = load_apps(settings.apps_config, os.environ)
        options = load_options(os.environ)
    except AuroraError as exc:
        print(f"aurora-{NAME}: configuration error: {exc}", file=sys.stderr)
        raise SystemExit(2) from exc
    run_service(NAME, partial(main, apps, options))


if __name__ == "__main__":
    run()
