"""Composition root of the app-supervisor: `python -m services.app_supervisor`."""

from __future__ import annotations

import asyncio
from functools import partial

from nats.aio.client import Client as NATS

from services.app_supervisor.service import SupervisorService
from services.app_supervisor.startup import load_app_supervisor_settings
from services.app_supervisor.supervisor import SupervisedApp, SupervisorOptions
from shared.config.settings import Settings, load_settings
from shared.readiness import ReadyWhenStarted
from shared.service import load_or_exit, run_service, run_until_stopped

NAME = "app-supervisor"


async def main(apps: list[SupervisedApp], options: SupervisorOptions, settings: Settings,
               nc: NATS, stop: asyncio.Event) -> None:
    service = SupervisorService(nc, settings.subjects, apps, options, plan=settings.stream_plan)
    await run_until_stopped(ReadyWhenStarted(service, settings.ready_file), stop)


def run() -> None:
    # Checked before connecting to NATS: a bad config or command fails at once, even when
    # NATS is not reachable yet, and nothing has been spawned.
    settings = load_or_exit(NAME, load_settings)
    own = load_or_exit(NAME, lambda: load_app_supervisor_settings(settings.apps_config))
    run_service(NAME, partial(main, own.apps, own.options), settings)

if __name__ == "__main__":
    run()
