"""The scheduler's parts, built by `build_scheduler`: the schedules bucket (followed by a mirror),
the timers stream, the reconciler, the tick loop (a durable every instance shares) and the admin
endpoints.

`__main__` runs one per process; tests build it in-process against a real nats-server. The start
order is `SchedulerParts`' order; the stop order is its reverse (`shared.wiring.Assembly`).
"""

from __future__ import annotations

from dataclasses import dataclass

from services.scheduler.admin import ScheduleAdmin
from services.scheduler.config import SchedulerSettings
from services.scheduler.reconciler import Reconciler, decode_schedule
from services.scheduler.ticks import TickHandler, TickLoop
from services.scheduler.timers import Timers, check_server
from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.schedule import Schedule
from shared.contracts.subjects import Subjects
from shared.jetstream.kvmirror import KvMirror
from shared.jetstream.streams import (
    ensure_bucket,
    ensure_streams,
    fabric_streams,
    schedule_timers_stream,
    schedules_bucket,
)
from shared.nats import write_through
from shared.nats.admin_service import start_admin_service
from shared.observability.logs import get_logger
from shared.resource_admin import ResourceAdmin
from shared.resources import kind_of
from shared.wiring import Assembly, Connections, StartedBy

VERSION = "0.1.0"
log = get_logger("aurora.scheduler")


@dataclass(frozen=True)
class SchedulerSetup:
    """What the scheduler read before connecting: its own settings and the streams' plan."""

    subjects: Subjects
    settings: SchedulerSettings
    plan: StreamPlan = DEFAULT_PLAN


@dataclass(frozen=True)
class SchedulerParts:
    timers: Timers
    mirror: KvMirror[Schedule]
    reconciler: Reconciler
    ticks: TickLoop
    admin: StartedBy


SchedulerService = Assembly[SchedulerParts]


async def build_scheduler(setup: SchedulerSetup, connections: Connections) -> SchedulerService:
    nc, js, subjects, options = connections.nc, connections.js, setup.subjects, setup.settings
    check_server(nc)  # before any stream is made: a server without timers is refused whole
    stream = schedule_timers_stream(subjects)
    await ensure_streams(js, [*fabric_streams(subjects), stream], plan=setup.plan)
    kv = await ensure_bucket(js, schedules_bucket(subjects), plan=setup.plan)
    timers = Timers(js, subjects, stream.name, tick_ttl_seconds=options.tick_ttl_seconds)
    # The reconciler reads the mirror, the mirror tells the reconciler of changes.
    reconciler = Reconciler(timers, lambda: dict(mirror.items), sweep_seconds=options.sweep_seconds)
    mirror = KvMirror(kv, decode_schedule, name="schedules", on_change=reconciler.changed)
    ticks = TickLoop(js, subjects, stream.name, TickHandler(js, subjects, timers, options, mirror.read_through),
                     options)
    admin = ScheduleAdmin(js, subjects, kv, timers, ticks.handler.stats, instance=options.instance)
    resources = ResourceAdmin(kind_of("Schedule"), kv)
    endpoints = StartedBy("the scheduler's admin endpoints", lambda: start_admin_service(
        nc, subjects, name="aurora-scheduler", version=VERSION,
        areas={"scheduler": {"health": admin.health},
               "schedules": {**resources.endpoints(), **admin.endpoints()}},
        description="turns schedules into schedule.triggered events; serves Schedule resources"))

    async def ready() -> None:
        await write_through.flush(nc)  # "ready" means the admin endpoints' subscriptions reached the server
        log.info("ready", instance=options.instance, schedules=len(mirror.items))

    parts = SchedulerParts(timers, mirror, reconciler, ticks, endpoints)
    # The mirror before the reconciler, so its first pass sees every schedule; the tick loop
    # once the timers are in line; the admin endpoints last.
    return Assembly("the scheduler service", parts, (mirror, reconciler, ticks, endpoints),
                    run=ticks.run, ready=ready)
