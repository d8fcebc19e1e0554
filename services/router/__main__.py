"""Composition root of the router: `python -m services.router`."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NATS

from services.router.config import load_router_settings
from services.router.service import RouterService
from shared.service import run_service
from shared.settings import Settings


async def main(settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    service = RouterService(nc, settings.subjects, load_router_settings())
    await service.start()
    try:
        await service.run(stop)
    finally:
        await service.stop()


if __name__ == "__main__":
    run_service("router", main)
