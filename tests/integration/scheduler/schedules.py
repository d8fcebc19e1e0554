"""Helpers for the scheduler tests: apply schedules, read their events and ticks, wait for signs."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from typing import Any

from nats.aio.client import Client as NATS
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import ConsumerInfo

from services.scheduler.ticks import DURABLE
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from shared.schedule_times import parse_iso
from tests.harness.processes import ServiceProcess
from tests.harness.stack import Stack
from tests.harness.waiting import NOT_SERVING_YET, poll

# Short waits so that the tests take seconds: a tick a dead scheduler held comes to another
# after 1 s; a tick more than 3 s late was missed.
FAST = {"AURORA_SCHEDULER_ACK_WAIT_SECONDS": "1", "AURORA_SCHEDULER_GRACE_SECONDS": "3",
        "AURORA_SCHEDULER_SWEEP_SECONDS": "1"}
EVENTS_SUBJECT = "amp.evt.aurora_scheduler.schedule.triggered"


def start_scheduler(stack: Stack, tag: str, **env: str) -> ServiceProcess:
    """One more scheduler in the test's stack, serving."""
    return stack.launch("scheduler", tag, **{**FAST, "AURORA_SCHEDULER_INSTANCE": tag, **env}).wait_ready(30)


async def admin(nc: NATS, subjects: Subjects, verb: str, body: dict[str, Any]) -> dict[str, Any]:
    async def answered() -> dict[str, Any] | None:
        try:
            reply: dict[str, Any] = await admin_request(nc, subjects, "schedules", verb, body, timeout=10)
        except NOT_SERVING_YET:
            return None
        return reply

    return await poll(answered, timeout=30, what=f"amp.admin.schedules.{verb}")


async def apply_schedule(nc: NATS, subjects: Subjects, **document: Any) -> dict[str, Any]:
    return await admin(nc, subjects, "apply", {"document": {"kind": "Schedule", **document}})


async def health(nc: NATS, subjects: Subjects) -> dict[str, Any]:
    reply: dict[str, Any] = await admin_request(nc, subjects, "scheduler", "health", {}, timeout=10)
    return reply


async def events_of(nc: NATS, schedule_id: str) -> list[dict[str, Any]]:
    """Every `schedule.triggered` event of `schedule_id` stored so far, in stream order."""
    sub = await nc.jetstream().subscribe(EVENTS_SUBJECT, ordered_consumer=True)
    found: list[dict[str, Any]] = []
    try:
        while True:
            try:
                msg = await sub.next_msg(timeout=1)
            except NatsTimeoutError:
                return found  # none stored at all
            doc = json.loads(msg.data)
            if doc["payload"]["subject"]["id"] == schedule_id:
                found.append(doc)
            if msg.metadata.num_pending == 0:
                return found
    finally:
        await sub.unsubscribe()


def tick_times(events: list[dict[str, Any]]) -> list[datetime]:
    return [parse_iso(e["header"]["timestamp"]) for e in events]


def per_tick(events: list[dict[str, Any]]) -> Counter[datetime]:
    return Counter(tick_times(events))


async def events_until(nc: NATS, schedule_id: str, wanted: Callable[[list[dict[str, Any]]], bool], *,
                       timeout: float = 30, what: str) -> list[dict[str, Any]]:
    async def enough() -> list[dict[str, Any]] | None:
        found = await events_of(nc, schedule_id)
        return found if wanted(found) else None

    return await poll(enough, timeout=timeout, what=what, interval=0.25)


async def tick_consumer(nc: NATS, subjects: Subjects) -> ConsumerInfo:
    return await nc.jetstream().consumer_info(subjects.stream("SCHEDULE_TIMERS"), DURABLE)


def whole_seconds(first: datetime, last: datetime) -> list[datetime]:
    """Every tick of `every: 1s` from `first` to `last`, both included."""
    count = round((last - first).total_seconds())
    return [datetime.fromtimestamp(first.timestamp() + n, first.tzinfo) for n in range(count + 1)]

