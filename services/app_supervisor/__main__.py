"""Composition root of the app-supervisor: `python -m services.app_supervisor`."""

from __future__ import annotations

import asyncio
from functools import partial

from nats.aio.client import Client as NATS

from services.app_supervisor.startup import SupervisorSettings, load_app_supervisor_settings
from services.app_supervisor.wiring import SupervisorSetup, build_app_supervisor
from shared.config.settings import Settings, load_settings
from shared.service import load_or_exit, run_built, run_service
from shared.wiring import Connections

NAME = "app-supervisor"


async def main(own: SupervisorSettings, settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    setup = SupervisorSetup(settings.subjects, own.apps, own.options, settings.stream_plan)
    await run_built(build_app_supervisor(setup, Connections(nc)), stop, settings.ready_file)


def run() -> None:
    # Checked before connecting to NATS: a bad config or command fails at once, even when
    # NATS is not reachable yet, and nothing has been spawned.
    settings = load_or_exit(NAME, load_settings)
    own = load_or_exit(NAME, lambda: load_app_supervisor_settings(settings.apps_config))
    run_service(NAME, partial(main, own), settings)


if __name__ == "__main__":
    run()
