"""The event-bridge's parts wired together: the bridge loop and its health endpoint.

`__main__` runs one `BridgeService` per process; any number share the bridge's durables. Its
lifecycle is `shared.lifecycle`'s: the admin endpoint stops first, then the bridge.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from nats.aio.client import Client as NATS

from services.event_bridge.bridge import BridgeConfig, EventBridge
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import DEFAULT_PLAN, StreamPlan
from shared.lifecycle import Lifecycle
from shared.nats.admin_service import start_admin_service

VERSION = "0.1.0"


class BridgeService(Lifecycle[EventBridge]):
    def __init__(self, nc: NATS, subjects: Subjects, config: BridgeConfig, *, plan: StreamPlan = DEFAULT_PLAN) -> None:
        super().__init__("the event-bridge service")
        self._nc = nc
        self._plan = plan
        self._subjects = subjects
        self._config = config

    async def _start(self, parts: contextlib.AsyncExitStack) -> EventBridge:
        bridge = EventBridge(self._nc, self._subjects, self._config, plan=self._plan)
        parts.push_async_callback(bridge.stop)
        await bridge.start()

        async def health(_: dict[str, Any]) -> dict[str, Any]:
            stats = bridge.stats
            return {"status": "ok", "published": stats.published, "dead_lettered": stats.dead_lettered,
                    "retried": stats.retried, "last_error": stats.last_error}

        admin = await start_admin_service(
            self._nc, self._subjects, name="aurora-event-bridge", version=VERSION,
            areas={"event_bridge": {"health": health}},
            description="turns raw signals into validated AMP events",
        )
        parts.push_async_callback(admin.stop)
        return bridge

    async def run(self, stop: asyncio.Event) -> None:
        await self.require_started().run(stop)
