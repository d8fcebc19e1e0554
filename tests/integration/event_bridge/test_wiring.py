"""The event-bridge built by `build_event_bridge` in this process, over a real nats-server: a raw
signal becomes its event on the events stream, and nothing of it answers after it stopped."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.js.errors import NotFoundError

from services.event_bridge.bridge import BridgeConfig
from services.event_bridge.wiring import BridgeSetup, build_event_bridge
from shared.clock import now_iso
from shared.contracts.signals import NativeEventSignal
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from shared.nats.signal_publisher import new_signal_id, publish_signal
from shared.wiring import Connections
from tests.harness.waiting import poll


async def test_the_bridge_is_built_in_process_bridges_a_signal_and_stops_whole(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    service = await build_event_bridge(BridgeSetup(subjects, BridgeConfig(fetch_timeout=0.2)), Connections(nc))
    assert [type(part).__name__ for part in service.order] == ["EventBridge", "StartedBy"]
    stop = asyncio.Event()
    async with service:
        running = asyncio.create_task(service.run(stop))
        signal = NativeEventSignal(
            signal_id=new_signal_id(), app="im.polaris.wired", observed_at=now_iso(),
            event={"payload": {"type": "message.received", "data": {"text": "built in-process"}}})
        await publish_signal(js, subjects, signal)

        async def stored() -> dict[str, Any] | None:
            try:
                msg = await js.get_last_msg(subjects.stream("EVENTS"), subjects.event("im.polaris.wired",
                                                                                       "message.received"))
            except NotFoundError:
                return None
            found: dict[str, Any] = json.loads(msg.data or b"{}")
            return found

        event = await poll(stored, what="the signal's event on the events stream")
        assert event["payload"]["data"] == {"text": "built in-process"}
        health = await admin_request(nc, subjects, "event_bridge", "health", {})
        assert health["status"] == "ok" and health["published"] == 1
        stop.set()
        await asyncio.wait_for(running, 10)
    assert not service.parts.bridge.started and not service.parts.admin.started
    with pytest.raises(NoRespondersError):
        await nc.request(subjects.admin("event_bridge", "health"), b"{}", timeout=2)
