"""Composition root of mcp-edge: `python -m services.mcp_edge`."""

from __future__ import annotations

import asyncio
from functools import partial

from nats.aio.client import Client as NATS

from services.mcp_edge.config import EdgeSettings, load_edge_settings
from services.mcp_edge.wiring import EdgeSetup, build_edge
from shared.config.settings import Settings, load_settings
from shared.service import load_or_exit, run_built, run_service
from shared.wiring import Connections

NAME = "mcp-edge"


async def main(own: EdgeSettings, settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    setup = EdgeSetup(settings.subjects, own, settings.stream_plan)
    await run_built(build_edge(setup, Connections(nc)), stop, settings.ready_file)


def run() -> None:
    # Everything is read and checked before connecting: a bad value exits 2 even while NATS is down.
    settings = load_or_exit(NAME, load_settings)
    own = load_or_exit(NAME, load_edge_settings)
    run_service(NAME, partial(main, own), settings)


if __name__ == "__main__":
    run()
