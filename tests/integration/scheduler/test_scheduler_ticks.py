"""The scheduler process with the bridge: every tick of a schedule is one `schedule.triggered`
event (actor system, subject the schedule, the schedule's data); pause, resume and trigger-now."""

from __future__ import annotations

import time

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_streams, fabric_streams
from shared.schedule_times import iso, parse_iso
from tests.harness.stack import Stack
from tests.harness.waiting import poll
from tests.integration.scheduler.schedules import (
    admin,
    apply_schedule,
    events_of,
    events_until,
    per_tick,
    start_scheduler,
    tick_times,
    whole_seconds,
)


@pytest.fixture
async def bridge(nc: NATS, subjects: Subjects, stack: Stack) -> None:
    await ensure_streams(nc.jetstream(), fabric_streams(subjects))
    stack.launch("bridge").wait_ready()


@pytest.mark.usefixtures("bridge")
async def test_each_tick_is_one_event_with_the_schedules_data(nc: NATS, subjects: Subjects, stack: Stack) -> None:
    start_scheduler(stack, "scheduler-1")
    applied = await apply_schedule(nc, subjects, id="every-second", every="1s", data={"report": "daily", "n": 1})
    assert applied["result"] == "created"
    events = await events_until(nc, "every-second", lambda found: len(found) >= 4, what="four ticks")

    times = tick_times(events)
    assert times == whole_seconds(times[0], times[-1])[: len(times)], [iso(t) for t in times]  # one a second, no gap
    assert len({e["header"]["message_id"] for e in events}) == len(events)
    for event in events:
        payload = event["payload"]
        assert payload["type"] == "schedule.triggered"
        assert payload["actor"] == {"id": "aurora.scheduler", "kind": "system"}
        assert payload["subject"] == {"kind": "schedule", "id": "every-second"}
        assert payload["data"] == {"report": "daily", "n": 1}
        assert event["header"]["source"]["app"] == "aurora.scheduler"

    shown = await admin(nc, subjects, "show", {"id": "every-second"})
    assert shown["enabled"] and shown["cadence"] == "every 1s" and shown["last_tick"] is not None
    assert len(shown["upcoming"]) == 5


@pytest.mark.usefixtures("bridge")
async def test_a_cron_schedule_in_a_time_zone_ticks_when_its_computation_says(nc: NATS, subjects: Subjects,
                                                                               stack: Stack) -> None:
    start_scheduler(stack, "scheduler-1")
    await apply_schedule(nc, subjects, id="cron-2s", cron="*/2 * * * * *", timezone="Asia/Kolkata")
    events = await events_until(nc, "cron-2s", lambda found: len(found) >= 2, what="two cron ticks")
    assert all(t.second % 2 == 0 and t.microsecond == 0 for t in tick_times(events)), tick_times(events)
    assert (tick_times(events)[1] - tick_times(events)[0]).total_seconds() == 2


@pytest.mark.usefixtures("bridge")
async def test_pause_stops_the_ticks_trigger_now_still_fires_and_resume_starts_again(
        nc: NATS, subjects: Subjects, stack: Stack) -> None:
    start_scheduler(stack, "scheduler-1")
    await apply_schedule(nc, subjects, id="pausable", every="1s", data={"k": "v"})
    await events_until(nc, "pausable", lambda found: len(found) >= 1, what="a first tick")

    assert (await admin(nc, subjects, "pause", {"id": "pausable"}))["result"] == "paused"
    assert (await admin(nc, subjects, "pause", {"id": "pausable"}))["result"] == "unchanged"

    async def disarmed() -> float | None:
        shown = await admin(nc, subjects, "show", {"id": "pausable"})
        return time.time() if shown["next_tick"] is None and not shown["enabled"] else None

    paused_at = await poll(disarmed, timeout=20, what="the paused schedule's timer disarmed")
    triggered = await admin(nc, subjects, "trigger", {"id": "pausable"})
    events = await events_until(nc, "pausable", lambda found: any(
        e["header"]["message_id"] == triggered["message_id"] for e in found), what="the trigger-now event")
    now_event = next(e for e in events if e["header"]["message_id"] == triggered["message_id"])
    assert now_event["payload"]["data"] == {"k": "v"}
    # Up to the trigger-now event (the bridge has handled everything before it), no tick after
    # the timer was disarmed (a tick at most one second before it may have been in flight).
    ticks_after = [e for e in events if e is not now_event and parse_iso(e["header"]["timestamp"]).timestamp()
                   > paused_at + 1]
    assert ticks_after == [], ticks_after

    assert (await admin(nc, subjects, "resume", {"id": "pausable"}))["result"] == "resumed"
    resumed = await events_until(nc, "pausable", lambda found: len(found) >= len(events) + 2,
                                 what="ticks again after resume")
    assert max(per_tick(resumed).values()) == 1


@pytest.mark.usefixtures("bridge")
async def test_unknown_schedules_and_bad_documents_get_clear_errors(nc: NATS, subjects: Subjects,
                                                                    stack: Stack) -> None:
    from shared.nats.admin_service import AdminRequestError, admin_request

    start_scheduler(stack, "scheduler-1")
    await admin(nc, subjects, "list", {})
    with pytest.raises(AdminRequestError, match="no Schedule 'nope'") as missing:
        await admin_request(nc, subjects, "schedules", "trigger", {"id": "nope"}, timeout=10)
    assert missing.value.code == "not_found"
    with pytest.raises(AdminRequestError, match=r"field timezone: .*IANA") as bad:
        await admin_request(nc, subjects, "schedules", "apply", {"document": {
            "kind": "Schedule", "id": "bad", "cron": "0 3 * * *", "timezone": "Mars/Olympus"}}, timeout=10)
    assert bad.value.code == "invalid"
    assert await events_of(nc, "bad") == []
