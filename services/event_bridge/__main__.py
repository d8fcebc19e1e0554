"""Composition root of the event-bridge: `python -m services.event_bridge`."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from nats.aio.client import Client as NATS

from services.event_bridge.bridge import BridgeConfig, EventBridge
from shared.admin import start_admin_service
from shared.service import run_service
from shared.settings import Settings


async def main(settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    config = BridgeConfig(batch=int(os.environ.get("AURORA_BRIDGE_BATCH", "256")))
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
        nc, settings.subjects, name="aurora-event-bridge", area="event_bridge",
        version="0.1.0", endpoints={"health": health},
        description="turns raw signals into validated AMP events",
    )
    try:
        await bridge.run(stop)
    finally:
        await admin.stop()


if __name__ == "__main__":
    run_service("event-bridge", main)
