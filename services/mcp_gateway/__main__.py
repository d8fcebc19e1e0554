"""Composition root of the MCP gateway: `python -m services.mcp_gateway`."""

from __future__ import annotations

import asyncio
import os

from nats.aio.client import Client as NATS
from nats.micro import add_service
from nats.micro.request import Request

from services.mcp_gateway.admin import admin_endpoints
from services.mcp_gateway.gateway import Gateway
from services.mcp_gateway.outbox import SignalOutbox
from services.mcp_gateway.toolcalls import ToolCallHandler
from shared.admin import wrap_handler
from shared.appconfig import load_apps_config
from shared.logs import get_logger
from shared.service import run_service
from shared.settings import Settings
from shared.streams import apps_bucket, ensure_bucket, ensure_streams, fabric_streams

log = get_logger("aurora.mcp_gateway")


class InFlight:
    """Counts calls being served, so shutdown can let them finish (bounded)."""

    def __init__(self) -> None:
        self.count = 0
        self.idle = asyncio.Event()
        self.idle.set()

    def enter(self) -> None:
        self.count += 1
        self.idle.clear()

    def leave(self) -> None:
        self.count -= 1
        if self.count == 0:
            self.idle.set()


async def main(settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    apps = load_apps_config(settings.apps_config)
    js = nc.jetstream()
    await ensure_streams(js, fabric_streams(settings.subjects))
    health = await ensure_bucket(js, apps_bucket(settings.subjects))
    outbox = SignalOutbox(js, settings.subjects)
    outbox.start()
    gateway = Gateway(nc, settings.subjects, apps, health, outbox)
    await gateway.start()
    handler = ToolCallHandler(gateway.catalog, gateway.sessions, on_result=gateway.record_call)
    in_flight = InFlight()

    async def tool_call(request: Request) -> None:
        in_flight.enter()
        try:
            await request.respond(await handler.handle(request.data))
        finally:
            in_flight.leave()

    service = await add_service(
        nc, name="aurora-mcp-gateway", version="0.1.0", description="MCP sessions, tool catalog and tool calls"
    )
    await service.add_endpoint(name="tool-call", subject=settings.subjects.tool_call, handler=tool_call)
    for verb, endpoint in admin_endpoints(gateway).items():
        await service.add_endpoint(
            name=f"gateway-{verb}".replace("_", "-"),
            subject=settings.subjects.admin("gateway", verb),
            handler=wrap_handler(verb, endpoint),
        )
    log.info("serving", apps=len(gateway.sessions), tools=len(gateway.catalog.tools()))
    await stop.wait()

    # The seed's shutdown order: stop taking calls, let in-flight calls finish or time out,
    # close the MCP sessions (the supervisor stops app processes only after that).
    await service.stop()
    grace = float(os.environ.get("AURORA_SHUTDOWN_WAIT_SECONDS", "10"))
    try:
        await asyncio.wait_for(in_flight.idle.wait(), grace)
    except TimeoutError:
        log.warning("calls still in flight at shutdown", count=in_flight.count)
    await gateway.stop()
    await outbox.stop()


if __name__ == "__main__":
    run_service("mcp-gateway", main)
