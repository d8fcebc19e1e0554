"""Composition root of the event-bridge: `python -m services.event_bridge`."""

from __future__ import annotations

import asyncio
from functools import partial

from nats.aio.client import Client as NATS

from services.event_bridge.bridge import BridgeConfig
from services.event_bridge.config import load_event_bridge_settings
from services.event_bridge.wiring import BridgeSetup, build_event_bridge
from shared.config.settings import Settings, load_settings
from shared.service import load_or_exit, run_built, run_service
from shared.wiring import Connections

NAME = "event-bridge"


async def main(config: BridgeConfig, settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    setup = BridgeSetup(settings.subjects, config, settings.stream_plan)
    await run_built(build_event_bridge(setup, Connections(nc)), stop, settings.ready_file)


def run() -> None:
    # Everything is read and checked before connecting: a bad value exits 2 even while NATS is down.
    settings = load_or_exit(NAME, load_settings)
    config = load_or_exit(NAME, load_event_bridge_settings)
    run_service(NAME, partial(main, config), settings)


if __name__ == "__main__":
    run()
