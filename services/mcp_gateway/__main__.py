"""Composition root of the MCP gateway: `python -m services.mcp_gateway`."""

from __future__ import annotations

import asyncio
from functools import partial

from nats.aio.client import Client as NATS

from services.mcp_gateway.config import GatewaySettings, load_mcp_gateway_settings
from services.mcp_gateway.wiring import GatewaySetup, build_gateway
from shared.config.settings import Settings, load_settings
from shared.observability import memwatch
from shared.redaction import Redactor
from shared.service import load_or_exit, run_built, run_service
from shared.wiring import Connections

NAME = "mcp-gateway"


async def main(own: GatewaySettings, redactor: Redactor, settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    memwatch.install(asyncio.get_running_loop(), settings.tracemalloc)  # AURORA_TRACEMALLOC=1 only
    setup = GatewaySetup(settings.subjects, own, settings.stream_plan, redactor)
    await run_built(build_gateway(setup, Connections(nc)), stop, settings.ready_file)


def run() -> None:
    # Everything is read and checked before connecting: a bad value exits 2 even while NATS is down.
    settings = load_or_exit(NAME, load_settings)
    own = load_or_exit(NAME, lambda: load_mcp_gateway_settings(settings.apps_config))
    redactor = Redactor()  # learns each credential the gateway reads; every log line passes through it
    run_service(NAME, partial(main, own, redactor), settings, scrub=redactor.scrub)


if __name__ == "__main__":
    run()
