"""Composition root of the app-supervisor: `python -m services.app_supervisor`."""

from __future__ import annotations

import asyncio
from functools import partial

from nats.aio.client import Client as NATS
from nats.micro.service import Service

from services.app_supervisor.admin import serve_admin
from services.app_supervisor.startup import load_app_supervisor_settings
from services.app_supervisor.supervisor import SupervisedApp, Supervisor, SupervisorOptions
from shared.readiness import mark_not_ready, mark_ready
from shared.service import load_or_exit, run_service
from shared.settings import Settings, load_settings

NAME = "app-supervisor"


async def main(apps: list[SupervisedApp], options: SupervisorOptions, settings: Settings,
               nc: NATS, stop: asyncio.Event) -> None:
    mark_not_ready()  # a restarted container keeps the last process's file
    supervisor = Supervisor(nc, settings.subjects, apps, options)
    admin: Service | None = None
    try:
        await supervisor.start()
        admin = await serve_admin(nc, settings.subjects, supervisor)
        mark_ready()
        await stop.wait()
    finally:
        mark_not_ready()
        await supervisor.shutdown()  # `status` still answers while apps are being stopped
        if admin is not None:
            await admin.stop()


def run() -> None:
    # Checked before connecting to NATS: a bad config or command fails at once, even when
    # NATS is not reachable yet, and nothing has been spawned.
    settings = load_or_exit(NAME, load_settings)
    own = load_or_exit(NAME, lambda: load_app_supervisor_settings(settings.apps_config))
    run_service(NAME, partial(main, own.apps, own.options), settings)

if __name__ == "__main__":
    run()
