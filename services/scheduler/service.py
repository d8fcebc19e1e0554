"""The scheduler's parts wired together: the schedules bucket (followed), the timers stream, the
reconciler, the tick consumer (a durable every instance shares) and the admin endpoints.

`__main__` runs one `SchedulerService` per process; tests run it in-process or as processes.
Its lifecycle is `shared.lifecycle`'s: the stop order is the start order reversed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass

from nats.aio.client import Client as NATS
from nats.js.api import ConsumerConfig

from services.scheduler.admin import ScheduleAdmin
from services.scheduler.config import SchedulerSettings
from services.scheduler.reconciler import Reconciler
from services.scheduler.ticks import TickHandler
from services.scheduler.timers import Timers
from shared.contracts.resource import parse_resource
from shared.contracts.schedule import Schedule
from shared.contracts.subjects import Subjects
from shared.errors import AuroraError
from shared.jetstream.streams import (
    DEFAULT_PLAN,
    StreamPlan,
    ensure_bucket,
    ensure_streams,
    fabric_streams,
    schedule_timers_stream,
    schedules_bucket,
)
from shared.lifecycle import Lifecycle
from shared.nats import write_through
from shared.nats.admin_service import start_admin_service
from shared.nats.consume_loop import AtLeastOnceConsumer, ConsumerStats, work_consumer
from shared.nats.kvmirror import KvMirror
from shared.observability.logs import get_logger
from shared.resource_admin import ResourceAdmin
from shared.resources import kind_of

VERSION = "0.1.0"
DURABLE = "scheduler"
MIN_SERVER = (2, 12)  # JetStream message schedules (`Nats-Schedule: @at …`)
log = get_logger("aurora.scheduler")


class TimersUnsupported(AuroraError):
    """The NATS server is too old for JetStream message schedules."""


def decode_schedule(value: bytes) -> Schedule:
    return parse_resource(Schedule, json.loads(value))


def tick_consumer(settings: SchedulerSettings, subjects: Subjects) -> ConsumerConfig:
    """The durable every instance pulls ticks from: a tick unanswered for the ack wait (its
    scheduler died holding it) goes to another instance. Deliveries are unlimited: a tick is
    tried until its events are published (a tick that can never be is dead-lettered by the
    loop itself), so the server never gives up on one silently (no advisory listener needed)."""
    return work_consumer(DURABLE, "schedule ticks, shared by every scheduler instance", subjects.schedule_ticks_all,
                         max_deliver=-1, max_ack_pending=1000, ack_wait=settings.ack_wait_seconds)


def check_server(nc: NATS) -> None:
    version = nc.connected_server_version
    if (version.major, version.minor) < MIN_SERVER:
        raise TimersUnsupported(
            f"nats-server {version} has no JetStream message schedules; the scheduler needs "
            f"{MIN_SERVER[0]}.{MIN_SERVER[1]} or newer")


@dataclass(frozen=True)
class _Running:
    consumer: AtLeastOnceConsumer
    handler: TickHandler


class SchedulerService(Lifecycle[_Running]):
    def __init__(self, nc: NATS, subjects: Subjects, settings: SchedulerSettings, *,
                 plan: StreamPlan = DEFAULT_PLAN) -> None:
        super().__init__("the scheduler service")
        self._nc = nc
        self._plan = plan
        self._subjects = subjects
        self._settings = settings

    async def _start(self, parts: contextlib.AsyncExitStack) -> _Running:
        nc, subjects, settings = self._nc, self._subjects, self._settings
        check_server(nc)
        js = nc.jetstream()
        stream = schedule_timers_stream(subjects)
        await ensure_streams(js, [*fabric_streams(subjects), stream], plan=self._plan)
        kv = await ensure_bucket(js, schedules_bucket(subjects), plan=self._plan)
        timers = Timers(js, subjects, stream.name, tick_ttl_seconds=settings.tick_ttl_seconds)
        # The reconciler reads the mirror, the mirror tells the reconciler of changes: the
        # mirror is started first, so the reconciler's first pass sees every schedule.
        reconciler = Reconciler(timers, lambda: dict(mirror.items), sweep_seconds=settings.sweep_seconds)
        mirror = KvMirror(kv, decode_schedule, name="schedules", on_change=reconciler.changed)
        parts.push_async_callback(mirror.stop)
        await mirror.start()
        parts.push_async_callback(reconciler.stop)
        await reconciler.start()
        handler = TickHandler(js, subjects, timers, settings, mirror.read_through)
        consumer = AtLeastOnceConsumer(js, subjects, stream=stream.name, config=tick_consumer(settings, subjects),
                                       stage="scheduler", stats=ConsumerStats())
        parts.push_async_callback(consumer.stop)
        await consumer.start()
        admin = ScheduleAdmin(js, subjects, kv, timers, handler.stats, instance=settings.instance)
        resources = ResourceAdmin(kind_of("Schedule"), kv)
        service = await start_admin_service(
            nc, subjects, name="aurora-scheduler", version=VERSION,
            areas={"scheduler": {"health": admin.health},
                   "schedules": {**resources.endpoints(), **admin.endpoints()}},
            description="turns schedules into schedule.triggered events; serves Schedule resources")
        parts.push_async_callback(service.stop)
        await write_through.flush(nc)  # "ready" means the admin endpoints' subscriptions reached the server
        log.info("ready", instance=settings.instance, schedules=len(mirror.items))
        return _Running(consumer=consumer, handler=handler)

    async def run(self, stop: asyncio.Event) -> None:
        running = self.require_started()
        consumer, handler = running.consumer, running.handler
        await consumer.run_each(stop, handler.handle, concurrency=4)
        # Stopping (SIGTERM): the ticks in hand, and those delivered as the last pull expired,
        # take milliseconds; they are finished (events published, next timers armed, acked)
        # rather than left to come back after the ack wait, with no timer armed meanwhile.
        handled = await consumer.handle_delivered(handler.handle, timeout=self._settings.ack_wait_seconds)
        if handled:
            log.info("ticks delivered while stopping were handled", count=handled)
