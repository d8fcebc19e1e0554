"""Composition root of the runner: `python -m services.runner` (scale by starting more)."""

from __future__ import annotations

import asyncio
from functools import partial

from nats.aio.client import Client as NATS

from services.runner.config import RunnerConfig, load_runner_settings
from services.runner.service import RunnerService
from shared.config.settings import Settings, load_settings
from shared.readiness import ReadyWhenStarted
from shared.redaction import Redactor
from shared.service import load_or_exit, run_service, run_until_stopped

NAME = "runner"


async def main(config: RunnerConfig, redactor: Redactor, settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    service = RunnerService(nc, settings.subjects, config, redactor, plan=settings.stream_plan)
    await run_until_stopped(ReadyWhenStarted(service, settings.ready_file), stop)


def run() -> None:
    # Everything is read and checked before connecting: a bad value exits 2 even while NATS is down.
    settings = load_or_exit(NAME, load_settings)
    config = load_or_exit(NAME, load_runner_settings)
    redactor = Redactor()  # learns the model key the runner holds; every log line passes through it
    run_service(NAME, partial(main, config, redactor), settings, scrub=redactor.scrub)


if __name__ == "__main__":
    run()
