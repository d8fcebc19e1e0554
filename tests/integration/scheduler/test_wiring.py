"""The scheduler built by `build_scheduler` in this process, over a real nats-server (with the
event-bridge built the same way): an applied schedule ticks into `schedule.triggered` events,
and nothing of the scheduler answers after it stopped."""

from __future__ import annotations

import asyncio

import pytest
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError

from services.event_bridge.bridge import BridgeConfig
from services.event_bridge.wiring import BridgeSetup, build_event_bridge
from services.scheduler.config import SchedulerSettings
from services.scheduler.wiring import SchedulerSetup, build_scheduler
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from shared.wiring import Connections
from tests.integration.scheduler.schedules import apply_schedule, events_until

FAST = SchedulerSettings(ack_wait_seconds=1, grace_seconds=3, sweep_seconds=1, instance="wired")


async def test_the_scheduler_is_built_in_process_ticks_and_stops_whole(nc: NATS, subjects: Subjects) -> None:
    scheduler = await build_scheduler(SchedulerSetup(subjects, FAST), Connections(nc))
    bridge = await build_event_bridge(BridgeSetup(subjects, BridgeConfig(fetch_timeout=0.2)), Connections(nc))
    assert [type(part).__name__ for part in scheduler.order] == ["KvMirror", "Reconciler", "TickLoop", "StartedBy"]
    stop = asyncio.Event()
    async with bridge, scheduler:
        running = [asyncio.create_task(bridge.run(stop)), asyncio.create_task(scheduler.run(stop))]
        status = await admin_request(nc, subjects, "scheduler", "health", {})
        assert status["instance"] == "wired"
        await apply_schedule(nc, subjects, id="wired-every-second", every="1s", data={"built": "in-process"})
        events = await events_until(nc, "wired-every-second", lambda found: len(found) >= 2, what="two ticks")
        assert events[0]["payload"]["data"] == {"built": "in-process"}
        assert (await admin_request(nc, subjects, "scheduler", "health", {}))["fired"] >= 2
        stop.set()
        await asyncio.wait_for(asyncio.gather(*running), 10)
    assert not any(part.started for part in scheduler.order)
    with pytest.raises(NoRespondersError):
        await nc.request(subjects.admin("scheduler", "health"), b"{}", timeout=2)
