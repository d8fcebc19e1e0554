"""The tick handler: a fired timer becomes its `schedule.triggered` signal(s), then the next timer;
and the tick loop that feeds it from the durable every scheduler instance shares.

Order matters for exactly-once: signals first (idempotent by their ids), then the next timer
(arming again replaces it), then the ack. A scheduler that dies anywhere in between leaves
the tick unacknowledged; another instance gets it after the ack wait and repeats the same
steps with the same ids, so each tick still becomes one event.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime

import msgspec
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig

from services.scheduler.config import SchedulerSettings
from services.scheduler.events import tick_signal, tick_signal_id
from services.scheduler.plan import plan_tick
from services.scheduler.timers import Timers, decode_tick
from shared.contracts.schedule import Schedule
from shared.contracts.subjects import Subjects
from shared.jetstream.consume_loop import ACK, AtLeastOnceConsumer, ConsumerStats, Outcome, Poison, work_consumer
from shared.lifecycle import Lifecycle
from shared.nats.signal_publisher import publish_signal
from shared.observability.logs import get_logger
from shared.schedule_times import iso

log = get_logger("aurora.scheduler.ticks")
DURABLE = "scheduler"


@dataclass
class TickStats:
    fired: int = 0
    skipped: int = 0
    dropped: int = 0  # ticks of schedules paused or deleted since their timer was armed
    last_error: str | None = None
    last_fired: dict[str, str] = field(default_factory=dict)


class TickHandler:
    def __init__(self, js: JetStreamContext, subjects: Subjects, timers: Timers, settings: SchedulerSettings,
                 schedule_of: Callable[[str], Awaitable[Schedule | None]],
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._js = js
        self._subjects = subjects
        self._timers = timers
        self._settings = settings
        self._schedule_of = schedule_of
        self._clock = clock
        self.stats = TickStats()

    async def handle(self, msg: Msg) -> Outcome:
        try:
            schedule_id, tick = decode_tick(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as exc:
            return Poison(f"not a schedule tick: {exc}")
        if msg.subject != self._subjects.schedule_tick(schedule_id):
            return Poison(f"tick of schedule {schedule_id!r} arrived on {msg.subject!r}")
        schedule = await self._schedule_of(schedule_id)
        if schedule is None or not schedule.enabled:
            self.stats.dropped += 1
            log.info("tick dropped", schedule=schedule_id, tick=iso(tick),
                     reason="deleted" if schedule is None else "paused")
            return ACK
        delivered = msg.metadata.num_delivered or 1
        if delivered > 1:  # the instance that had it died (or stalled) before answering
            log.info("tick taken over", schedule=schedule_id, tick=iso(tick), delivered=delivered)
        now = self._clock()
        plan = plan_tick(schedule.cadence(), catch_up=schedule.catch_up, tick=tick, now=now,
                         grace_seconds=self._settings.grace_seconds, max_catch_up=self._settings.max_catch_up)
        for due in plan.fire:
            late = (now - due).total_seconds() > self._settings.grace_seconds
            signal = tick_signal(schedule, due, signal_id=tick_signal_id(self._subjects.prefix, schedule.id, due),
                                 summary=f"schedule {schedule.id} {'caught up' if late else 'ticked'} at {iso(due)}")
            await publish_signal(self._js, self._subjects, signal)
        await self._timers.arm(schedule.id, plan.next_tick)
        self.stats.fired += len(plan.fire)
        self.stats.skipped += len(plan.skipped)
        if plan.fire:
            self.stats.last_fired[schedule.id] = iso(plan.fire[-1])
        if plan.skipped:
            log.info("missed ticks skipped", schedule=schedule.id, count=len(plan.skipped),
                     first=iso(plan.skipped[0]), last=iso(plan.skipped[-1]), catch_up=schedule.catch_up)
        if len(plan.fire) > 1:
            log.info("missed ticks caught up", schedule=schedule.id, count=len(plan.fire))
        return ACK


def tick_consumer(settings: SchedulerSettings, subjects: Subjects) -> ConsumerConfig:
    """The durable every instance pulls ticks from: a tick unanswered for the ack wait (its
    scheduler died holding it) goes to another instance. Deliveries are unlimited: a tick is
    tried until its events are published (a tick that can never be is dead-lettered by the
    loop itself), so the server never gives up on one silently (no advisory listener needed)."""
    return work_consumer(DURABLE, "schedule ticks, shared by every scheduler instance", subjects.schedule_ticks_all,
                         max_deliver=-1, max_ack_pending=1000, ack_wait=settings.ack_wait_seconds)


class TickLoop(Lifecycle[None]):
    """Pulls ticks from the shared durable and hands each to the `TickHandler`, `CONCURRENCY`
    at a time."""

    CONCURRENCY = 4

    def __init__(self, js: JetStreamContext, subjects: Subjects, stream: str, handler: TickHandler,
                 settings: SchedulerSettings) -> None:
        super().__init__("the tick loop")
        self.handler = handler
        self._ack_wait = settings.ack_wait_seconds
        self._consumer = AtLeastOnceConsumer(js, subjects, stream=stream, config=tick_consumer(settings, subjects),
                                             stage="scheduler", stats=ConsumerStats())

    async def _start(self, parts: AsyncExitStack) -> None:
        parts.push_async_callback(self._consumer.stop)
        await self._consumer.start()

    async def run(self, stop: asyncio.Event) -> None:
        self.require_started()
        await self._consumer.run_each(stop, self.handler.handle, concurrency=self.CONCURRENCY)
        # Stopping (SIGTERM): the ticks in hand, and those delivered as the last pull expired,
        # take milliseconds; they are finished (events published, next timers armed, acked)
        # rather than left to come back after the ack wait, with no timer armed meanwhile.
        handled = await self._consumer.handle_delivered(self.handler.handle, timeout=self._ack_wait)
        if handled:
            log.info("ticks delivered while stopping were handled", count=handled)
