"""Composition root of the event-bridge: `python -m services.event_bridge`."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from nats.aio.client import Client as NATS

from services.event_bridge.bridge import BridgeConfig, EventBridge
from services.event_bridge.config import load_event_bridge_settings
from shared.admin import start_admin_service
from shared.readiness import mark_not_ready, mark_ready
from shared.service import load_or_exit, run_service
from shared.settings import Settings, load_settings

NAME = "event-bridge"


async def main(config: BridgeConfig, settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    mark_not_ready()  # a restarted container keeps the last process's file
    bridge = EventBridge(nc, settings.subjects, config)
    await bridge.start()

    async def health(_: dict[str, Any]) -> dict[str, Any]:
        stats = bridge.stats
        return {
            "status": "ok",
            "published": stats.published,
            "dead_lettered": stats.dead_lettered,
            "retried": stats.retried,
            "last_error": stats.last_error,
        }

    admin = await start_admin_service(
        nc, settings.subjects, name="aurora-event-bridge", version="0.1.0",
        areas={"event_bridge": {"health": health}},
        description="turns raw signals into validated AMP events",
    )
    mark_ready()
    try:
        await bridge.run(stop)
    finally:
        mark_not_ready()
        await admin.stop()


def run() -> None:
    # Everything is read and checked before connecting: a bad value exits 2 even while NATS is down.
    settings = load_or_exit(NAME, load_settings)
    config = load_or_exit(NAME, load_event_bridge_settings)
    run_service(NAME, partial(main, config), settings)


if __name__ == "__main__":
    run()
