"""Composition root of the runner: `python -m services.runner` (scale by starting more)."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NATS

from services.runner.config import load_runner_config
from services.runner.service import RunnerService
from shared.service import run_service
from shared.settings import Settings


async def main(settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    service = RunnerService(nc, settings.subjects, load_runner_config())
    await service.start()
    try:
        await service.run(stop)
    finally:
        await service.stop()


if __name__ == "__main__":
    run_service("runner", main)
