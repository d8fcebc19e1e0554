"""Exactly one event per tick across scheduler instances and restarts: a second instance killed
while it holds a tick, a scheduler that dies after publishing but before acknowledging, and a
restart after downtime with `catch_up: true` (every missed tick fires, once) and `false`
(missed ticks are skipped)."""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from services.scheduler.config import SchedulerSettings
from services.scheduler.reconciler import decode_schedule
from services.scheduler.ticks import DURABLE, TickHandler, TickLoop, tick_consumer
from services.scheduler.timers import Timers, decode_tick
from shared.contracts.subjects import Subjects
from shared.jetstream.consume_loop import ACK
from shared.jetstream.streams import (
    ensure_bucket,
    ensure_streams,
    fabric_streams,
    schedule_timers_stream,
    schedules_bucket,
)
from shared.schedule_times import Cadence, iso
from tests.harness.processes import ServiceProcess
from tests.harness.stack import Stack
from tests.harness.waiting import poll
from tests.integration.scheduler.schedules import (
    apply_schedule,
    events_until,
    health,
    per_tick,
    start_scheduler,
    tick_times,
    whole_seconds,
)
from tests.integration.scheduler.schedules import tick_consumer as consumer_info


@pytest.fixture
async def bridge(nc: NATS, subjects: Subjects, stack: Stack) -> None:
    await ensure_streams(nc.jetstream(), fabric_streams(subjects))
    stack.launch("bridge").wait_ready()


TAKEN_OVER = '"tick taken over"'


def covered(events: list[dict[str, Any]], until: float) -> bool:
    """Every tick from the first event's to `until` (a Unix time) has an event stored: events of
    two instances, or caught up, are not stored in tick order, so a later tick's event is no
    sign that an earlier one's is there."""
    times = set(tick_times(events))
    if not times or max(times).timestamp() < until:
        return False
    first = min(times)
    return all(t in times for t in whole_seconds(first, datetime.fromtimestamp(until, UTC)) if t.timestamp() <= until)


def exactly_once(events: list[dict[str, Any]]) -> None:
    """Every tick from the first to the last event has exactly one event."""
    counts = per_tick(events)
    times = sorted(counts)
    expected = whole_seconds(times[0], times[-1])
    assert [iso(t) for t in times] == [iso(t) for t in expected], "a tick without an event"
    assert {iso(t): n for t, n in counts.items() if n != 1} == {}, "a tick with more than one event"


DROPPED = '"tick dropped"'


async def ack_pending(nc: NATS, subjects: Subjects) -> int:
    return int((await consumer_info(nc, subjects)).num_ack_pending or 0)


async def pull_waiting(nc: NATS, subjects: Subjects) -> bool:
    return bool((await consumer_info(nc, subjects)).num_waiting)


async def off_beat_pull(nc: NATS, subjects: Subjects, victim: ServiceProcess) -> None:
    """Make `victim` send its next pull request half-way between two ticks: ticks of a schedule
    that does not exist (which it drops) reach it there, as many as its loop takes at once, so
    they use up the request it had open (one asked right after the previous tick, which would
    expire on the next one) and it asks again. Its requests last one second (the consumer's
    fetch timeout), so that one is still waiting when the next real tick fires."""
    now = time.time()
    await asyncio.sleep(math.ceil(now) - now + 0.4)  # 0.4 s after a whole second
    before = victim.logs().count(DROPPED)
    for _ in range(TickLoop.CONCURRENCY):
        body = json.dumps({"schedule": "off-beat", "tick": iso(datetime.now(UTC))}).encode()
        await nc.jetstream().publish(subjects.schedule_tick("off-beat"), body)

    async def dropped() -> bool:
        return victim.logs().count(DROPPED) >= before + TickLoop.CONCURRENCY

    await poll(dropped, timeout=0.4, what="the victim to drop the off-beat ticks", interval=0.01)
    await poll(lambda: pull_waiting(nc, subjects), timeout=0.1, what="the victim's next pull request",
               interval=0.01)


async def hold_a_tick(nc: NATS, subjects: Subjects, victim: ServiceProcess, other: ServiceProcess) -> None:
    """Leave `victim` frozen holding a tick it was given and cannot answer.

    `other` is frozen first, until a tick after its pull requests expired was handled (so by
    `victim`, the only instance still asking); then `victim` is frozen with a pull request
    waiting, and the server hands it the next tick. A try whose timing a loaded machine spoilt
    (no tick held a second after the freeze) thaws `victim` and tries again."""
    os.kill(other.pid, signal.SIGSTOP)
    frozen_at = time.time()
    await events_until(nc, "failover", lambda found: tick_times(found)[-1].timestamp() > frozen_at + 1.5,
                       what="a tick handled by the victim alone")
    for _ in range(5):
        await poll(lambda: _none_pending(nc, subjects), timeout=10, what="every tick answered")
        try:
            await off_beat_pull(nc, subjects, victim)
        except AssertionError:
            continue
        os.kill(victim.pid, signal.SIGSTOP)
        try:
            await poll(lambda: ack_pending(nc, subjects), timeout=1.5, what="a tick the frozen victim holds")
            return
        except AssertionError:
            os.kill(victim.pid, signal.SIGCONT)
    raise AssertionError("the frozen scheduler was never given a tick in 5 tries")


async def _none_pending(nc: NATS, subjects: Subjects) -> bool:
    return await ack_pending(nc, subjects) == 0


@pytest.mark.usefixtures("bridge")
async def test_two_instances_one_killed_holding_a_tick_give_one_event_per_tick(
        nc: NATS, subjects: Subjects, stack: Stack) -> None:
    # catch_up false: the tick the killed instance held must still be on time when the other
    # gets it (after the 1 s ack wait); a 10 s grace keeps a loaded machine from making a miss.
    first = start_scheduler(stack, "scheduler-a", AURORA_SCHEDULER_GRACE_SECONDS="10")
    second = start_scheduler(stack, "scheduler-b", AURORA_SCHEDULER_GRACE_SECONDS="10")
    await apply_schedule(nc, subjects, id="failover", every="1s", catch_up=False)
    await events_until(nc, "failover", lambda found: len(found) >= 2, what="the first ticks")

    await hold_a_tick(nc, subjects, first, second)
    first.kill()  # SIGKILL while it holds a tick it took and never answered
    killed_at = datetime.now(UTC)
    os.kill(second.pid, signal.SIGCONT)
    events = await events_until(nc, "failover", lambda found: covered(found, killed_at.timestamp() + 4),
                                what="an event for every tick until 4 s after the kill")
    exactly_once(events)
    assert second.has_logged(TAKEN_OVER)  # the held tick came to it, and is in `events` once


@pytest.mark.usefixtures("bridge")
async def test_a_scheduler_dying_after_publishing_before_acking_adds_no_event(nc: NATS, subjects: Subjects,
                                                                             stack: Stack) -> None:
    """The tick is handled (its signal published, the next timer armed) but never acknowledged,
    as if the process died right there; the scheduler process that gets it again repeats the
    same steps, and the tick stays one event. (`catch_up`, as no scheduler runs until the
    process has started: the ticks of that while fire late rather than being skipped.)"""
    js = nc.jetstream()
    settings = SchedulerSettings(ack_wait_seconds=1, grace_seconds=3)
    stream = schedule_timers_stream(subjects)
    await ensure_streams(js, [stream])
    kv = await ensure_bucket(js, schedules_bucket(subjects))
    timers = Timers(js, subjects, stream.name, tick_ttl_seconds=3600)
    await js.add_consumer(stream.name, config=tick_consumer(settings, subjects).evolve(name=DURABLE))
    pull = await js.pull_subscribe_bind(DURABLE, stream=stream.name)

    await kv.put("dying", b'{"kind": "Schedule", "id": "dying", "every": "1s", "data": {"x": 1}, "catch_up": true}')
    await timers.arm("dying", Cadence(every_seconds=1).next_after(datetime.now(UTC)))  # the first tick
    [held] = await pull.fetch(1, timeout=10)

    async def schedule_of(key: str) -> object:
        return decode_schedule((await kv.get(key)).value or b"")

    handler = TickHandler(js, subjects, timers, settings, schedule_of)  # type: ignore[arg-type]
    assert await handler.handle(held) == ACK and handler.stats.fired == 1  # ... and never acked
    await pull.unsubscribe()

    after = start_scheduler(stack, "scheduler-after")
    first_tick = decode_tick(held.data)[1].timestamp()
    events = await events_until(nc, "dying", lambda found: covered(found, first_tick + 3),
                                what="an event for every tick after the redelivery")
    assert after.has_logged('"tick taken over"')
    exactly_once(events)
    assert tick_times(events)[0] == decode_tick(held.data)[1]  # the held tick: one event, the first


async def _stopped_for(scheduler: ServiceProcess, seconds: float) -> float:
    scheduler.terminate()
    stopped = time.time()
    await asyncio.sleep(seconds)  # downtime: the timers fire meanwhile, with no scheduler to take the ticks
    return stopped


@pytest.mark.usefixtures("bridge")
async def test_restart_catches_up_or_skips_missed_ticks(nc: NATS, subjects: Subjects, stack: Stack) -> None:
    grace = 2.0
    env = {"AURORA_SCHEDULER_GRACE_SECONDS": str(grace)}
    scheduler = start_scheduler(stack, "scheduler-1", **env)
    await apply_schedule(nc, subjects, id="catch-up", every="1s", catch_up=True)
    await apply_schedule(nc, subjects, id="skip", every="1s", catch_up=False)
    for schedule in ("catch-up", "skip"):
        await events_until(nc, schedule, lambda found: len(found) >= 2, what=f"{schedule}'s first ticks")

    stopped = await _stopped_for(scheduler, 6.0)

    async def ticks_waiting() -> bool:  # one fired timer per schedule, not handled by anyone
        # A timer that fired as the stopping scheduler's last pull was still open went out to it
        # and was never acked: it is waiting too, to come back after the ack wait.
        info = await consumer_info(nc, subjects)
        return info.num_pending + (info.num_ack_pending or 0) >= 2

    await poll(ticks_waiting, timeout=10, what="the timers to fire while no scheduler runs")
    restarted = time.time()
    start_scheduler(stack, "scheduler-2", **env)

    caught = await events_until(nc, "catch-up", lambda found: covered(found, restarted + 1),
                                what="an event for every catch-up tick, the downtime's too")
    exactly_once(caught)  # every tick of the downtime fired late, once

    skipped = await events_until(nc, "skip", lambda found: tick_times(found)[-1].timestamp() > restarted + 1,
                                 what="skip's ticks after the restart")
    assert max(per_tick(skipped).values()) == 1
    # A tick of the downtime older than the grace when the scheduler came back was missed: no
    # scheduler could handle it before `restarted`, so it was handled more than `grace` late.
    missed = [t for t in whole_seconds(datetime.fromtimestamp(stopped + 1.5, UTC).replace(microsecond=0),
                                       datetime.fromtimestamp(restarted - grace - 0.5, UTC))
              if stopped + 1.5 < t.timestamp() < restarted - grace - 0.5]
    assert len(missed) >= 2, (stopped, restarted)
    fired = {iso(t) for t in tick_times(skipped)}
    assert [iso(t) for t in missed if iso(t) in fired] == []
    assert (await health(nc, subjects))["skipped"] >= len(missed)
