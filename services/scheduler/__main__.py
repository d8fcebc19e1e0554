"""Composition root of the scheduler: `python -m services.scheduler`."""

from __future__ import annotations

import asyncio
from functools import partial

from nats.aio.client import Client as NATS

from services.scheduler.config import SchedulerSettings, load_scheduler_settings
from services.scheduler.wiring import SchedulerSetup, build_scheduler
from shared.config.settings import Settings, load_settings
from shared.service import load_or_exit, run_built, run_service
from shared.wiring import Connections

NAME = "scheduler"


async def main(own: SchedulerSettings, settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    setup = SchedulerSetup(settings.subjects, own, settings.stream_plan)
    await run_built(build_scheduler(setup, Connections(nc)), stop, settings.ready_file)


def run() -> None:
    # Everything is read and checked before connecting: a bad value exits 2 even while NATS is down.
    settings = load_or_exit(NAME, load_settings)
    own = load_or_exit(NAME, load_scheduler_settings)
    run_service(NAME, partial(main, own), settings)


if __name__ == "__main__":
    run()
