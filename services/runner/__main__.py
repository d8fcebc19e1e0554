"""Composition root of the runner: `python -m services.runner` (scale by starting more)."""

from __future__ import annotations

import asyncio
from functools import partial

from nats.aio.client import Client as NATS

from services.runner.config import RunnerConfig, load_runner_settings
from services.runner.wiring import RunnerSetup, build_runner
from shared.config.settings import Settings, load_settings
from shared.redaction import Redactor
from shared.service import load_or_exit, run_built, run_service
from shared.wiring import Connections

NAME = "runner"


async def main(config: RunnerConfig, redactor: Redactor, settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    setup = RunnerSetup(settings.subjects, config, redactor, settings.stream_plan)
    await run_built(build_runner(setup, Connections(nc)), stop, settings.ready_file)


def run() -> None:
    # Everything is read and checked before connecting: a bad value exits 2 even while NATS is down.
    settings = load_or_exit(NAME, load_settings)
    config = load_or_exit(NAME, load_runner_settings)
    redactor = Redactor()  # every log line and step log passes through it: it knows the model key the runner holds
    redactor.learn(config.models.default_api_key)
    run_service(NAME, partial(main, config, redactor), settings, scrub=redactor.scrub)


if __name__ == "__main__":
    run()
