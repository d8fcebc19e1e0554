"""The app-supervisor's parts, built by `build_app_supervisor`: the process health records, the
admin endpoints, the watch on the gateway's sessions and the supervisor of the apps.

`__main__` runs one per process; tests build it in-process against a real nats-server. The start
order is `SupervisorParts`' order; the stop order is its reverse (`shared.wiring.Assembly`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from services.app_supervisor.admin import serve_admin
from services.app_supervisor.health import HealthStore, open_health_store
from services.app_supervisor.reporter import NatsReporter
from services.app_supervisor.sessions import SessionWatch
from services.app_supervisor.supervisor import SupervisedApp, Supervisor, SupervisorOptions
from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_streams, fabric_streams
from shared.nats import write_through
from shared.wiring import Assembly, Connections, StartedBy


@dataclass(frozen=True)
class SupervisorSetup:
    """What the supervisor read before connecting: the stdio apps (their commands resolved),
    its timings, and the streams' plan."""

    subjects: Subjects
    apps: Sequence[SupervisedApp]
    options: SupervisorOptions
    plan: StreamPlan = DEFAULT_PLAN


@dataclass(frozen=True)
class SupervisorParts:
    health: HealthStore
    admin: StartedBy
    sessions: SessionWatch
    supervisor: Supervisor


SupervisorService = Assembly[SupervisorParts]


async def build_app_supervisor(setup: SupervisorSetup, connections: Connections) -> SupervisorService:
    nc, subjects = connections.nc, setup.subjects
    await ensure_streams(connections.js, fabric_streams(subjects), plan=setup.plan)
    health = await open_health_store(connections.js, subjects, setup.plan)
    sessions = SessionWatch(nc, subjects, [(app.spec.app_id, app.spec.instance) for app in setup.apps])
    supervisor = Supervisor(nc, subjects, setup.apps, NatsReporter(nc, subjects, health), sessions.book,
                            setup.options)
    endpoints = StartedBy("the app-supervisor's admin endpoints", lambda: serve_admin(nc, subjects, supervisor))

    async def ready() -> None:
        await write_through.flush(nc)  # "ready" means the admin endpoints' subscriptions reached the server

    parts = SupervisorParts(health, endpoints, sessions, supervisor)
    # The admin endpoints first, so they are stopped last: `status` answers while the apps stop.
    # The session watch before any app's `started`, which the gateway answers with `connected`,
    # and stopped after the apps, whose stop waits for the gateway to close their sessions.
    return Assembly("the app-supervisor service", parts, (endpoints, sessions, supervisor), ready=ready)
