"""Keeps each schedule's timer in line with its resource: armed when enabled, disarmed when not.

It runs in every scheduler instance, on each change the bucket watch reports and every
`sweep_seconds`; what it does is idempotent (arming the same tick twice leaves one timer), so
instances need not agree on who does it. A timer that is about to go off is left alone: its
tick handler arms the next one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from contextlib import AsyncExitStack, suppress
from datetime import UTC, datetime

from services.scheduler.timers import Armed, Timers
from shared.contracts.resource import parse_resource
from shared.contracts.schedule import Schedule
from shared.lifecycle import Lifecycle, cancel_task
from shared.observability.logs import get_logger
from shared.schedule_times import iso

log = get_logger("aurora.scheduler.reconciler")
_FIRING = 1.0  # seconds: a timer due this soon (or overdue) is firing; leave it


def decode_schedule(value: bytes) -> Schedule:
    """A schedule as the bucket holds it (applied only through validation)."""
    return parse_resource(Schedule, json.loads(value))


def wanted_timer(schedule: Schedule, armed: Armed | None, now: datetime) -> datetime | bool | None:
    """What the timer of `schedule` should become: a tick to arm, None to disarm, False to leave."""
    if not schedule.enabled:
        return None if armed is not None else False
    if armed is not None and (armed.tick - now).total_seconds() <= _FIRING:
        return False
    next_tick = schedule.cadence().next_after(now)
    if armed is not None and armed.tick == next_tick:
        return False
    return next_tick


class Reconciler(Lifecycle[None]):
    def __init__(self, timers: Timers, schedules: Callable[[], dict[str, Schedule]], *, sweep_seconds: float,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        super().__init__("the schedules reconciler")
        self._timers = timers
        self._schedules = schedules
        self._sweep = sweep_seconds
        self._clock = clock
        self._changed = asyncio.Event()
        self._known: set[str] = set()
        self.last_error: str | None = None

    def changed(self) -> None:
        """The bucket changed: reconcile soon (called by the mirror, from its watch task)."""
        self._changed.set()

    async def _start(self, parts: AsyncExitStack) -> None:
        await self.reconcile()
        task = asyncio.create_task(self._loop(), name="scheduler-reconcile")
        parts.push_async_callback(cancel_task, task)

    async def _loop(self) -> None:
        while True:
            with suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout=self._sweep)
            self._changed.clear()
            try:
                await self.reconcile()
                self.last_error = None
            except Exception as exc:  # NATS trouble: the next pass tries again
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.warning("reconcile failed", error=self.last_error)

    async def reconcile(self) -> None:
        schedules = self._schedules()
        for schedule in schedules.values():
            armed = await self._timers.armed(schedule.id)
            wanted = wanted_timer(schedule, armed, self._clock())
            if wanted is None:
                await self._timers.disarm(schedule.id)
                log.info("timer disarmed", schedule=schedule.id)
            elif isinstance(wanted, datetime):
                await self._timers.arm(schedule.id, wanted)
                log.info("timer armed", schedule=schedule.id, tick=iso(wanted))
        for gone in self._known - set(schedules):
            if await self._timers.armed(gone) is not None:
                await self._timers.disarm(gone)
                log.info("timer disarmed", schedule=gone, reason="deleted")
        self._known = set(schedules)
