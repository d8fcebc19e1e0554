"""A service that takes its time to stop (`python -m tests.harness.lingering_service`): on SIGTERM
it keeps waiting in `linger` for a minute, as a service held up by something would."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NATS

from shared.config.settings import Settings, load_settings
from shared.service import load_or_exit, run_service


async def linger() -> None:
    await asyncio.sleep(60)


async def main(settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    await stop.wait()
    await linger()


if __name__ == "__main__":
    run_service("lingering", main, load_or_exit("lingering", load_settings))
