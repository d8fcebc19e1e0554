# Over 300 lines: the one catalog of the platform's streams and buckets (half the module) beside how each is ensured.
"""Idempotent creation of the JetStream streams, consumers and buckets Aurora needs.

Streams hold data, so an existing stream that differs from what Aurora needs is a clear error
(`StreamConfigConflict`), never silently changed. A service's own durable consumer is its
private cursor: a differing consumer config is updated in place.

Replicas: every stream, bucket and object store is created with the `StreamPlan` its service's
composition root passes down (`Settings.stream_plan`: AURORA_STREAM_REPLICAS); a bucket keeps it,
so its watches are placed alike. A test or tool creating streams itself gets one replica.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from dataclasses import dataclass, field

from nats.js import JetStreamContext
from nats.js.api import (
    DiscardPolicy,
    KeyValueConfig,
    ObjectStoreConfig,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import APIError, BucketNotFoundError, NotFoundError
from nats.js.kv import KeyValue
from nats.js.object_store import ObjectStore

from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.subjects import Subjects
from shared.errors import StreamConfigConflict
from shared.jetstream.api_requests import creating, patiently
from shared.jetstream.bucket import Bucket

DAY = 24 * 3600.0
_SUBJECTS_OVERLAP = 10065  # JetStream's err_code for "subjects overlap with an existing stream"




@dataclass(frozen=True)
class StreamSpec:
    name: str
    subjects: tuple[str, ...]
    retention: RetentionPolicy = RetentionPolicy.LIMITS
    max_age: float = 0.0
    duplicate_window: float = 120.0
    max_msg_size: int = -1
    description: str = ""
    # JetStream message schedules (`Nats-Schedule`, nats-server 2.12+) with their rollup and
    # per-message TTL, and direct gets: only the schedules stream sets these.
    timers: bool = False

    def config(self, replicas: int = 1) -> StreamConfig:
        config = StreamConfig(
            name=self.name,
            description=self.description or None,
            subjects=list(self.subjects),
            retention=self.retention,
            storage=StorageType.FILE,
            discard=DiscardPolicy.OLD,
            max_age=self.max_age,
            duplicate_window=self.duplicate_window,
            max_msg_size=self.max_msg_size,
            num_replicas=replicas,
        )
        if self.timers:
            config = config.evolve(allow_msg_schedules=True, allow_msg_ttl=True, allow_rollup_hdrs=True,
                                   allow_direct=True)
        return config


@dataclass(frozen=True)
class BucketSpec:
    name: str
    history: int = 1
    ttl: float = 0.0
    description: str = ""
    extra: dict[str, object] = field(default_factory=dict)


def events_stream(subjects: Subjects) -> StreamSpec:
    return StreamSpec(
        name=subjects.stream("EVENTS"),
        subjects=(subjects.events_all,),
        max_age=7 * DAY,
        duplicate_window=600.0,
        description="AMP events: the inbox external consumers subscribe to",
    )


def signals_stream(subjects: Subjects) -> StreamSpec:
    return StreamSpec(
        name=subjects.stream("SIGNALS"),
        subjects=(subjects.signals_all,),
        retention=RetentionPolicy.WORK_QUEUE,
        duplicate_window=600.0,
        description="raw signals from supervisor and gateway, consumed by the event-bridge",
    )


def dlq_stream(subjects: Subjects) -> StreamSpec:
    return StreamSpec(
        name=subjects.stream("DLQ"),
        subjects=(subjects.dlq_all,),
        max_age=30 * DAY,
        description="what could not be processed, with the reason in headers",
    )


def fabric_streams(subjects: Subjects) -> list[StreamSpec]:
    return [events_stream(subjects), signals_stream(subjects), dlq_stream(subjects)]


def apps_bucket(subjects: Subjects) -> BucketSpec:
    """Health of every app: `proc.<app>.<instance>` (supervisor), `sess.<app>.<instance>` (gateway)."""
    return BucketSpec(name=subjects.stream("APPS"), history=5, description="app health")


def _differences(wanted: StreamConfig, actual: StreamConfig) -> list[str]:
    checks = {
        "subjects": (sorted(wanted.subjects or []), sorted(actual.subjects or [])),
        "retention": (wanted.retention, actual.retention),
        "storage": (wanted.storage, actual.storage),
        "max_age": (float(wanted.max_age or 0), float(actual.max_age or 0)),
        "duplicate_window": (float(wanted.duplicate_window or 0), float(actual.duplicate_window or 0)),
        "max_msg_size": (wanted.max_msg_size or -1, actual.max_msg_size or -1),
        "replicas (AURORA_STREAM_REPLICAS)": (wanted.num_replicas or 1, actual.num_replicas or 1),
    }
    if wanted.allow_msg_schedules:
        checks["allow_msg_schedules"] = (True, bool(actual.allow_msg_schedules))
    return [f"{name}: wanted {w!r}, found {a!r}" for name, (w, a) in checks.items() if w != a]


async def ensure_stream(js: JetStreamContext, spec: StreamSpec, *, plan: StreamPlan = DEFAULT_PLAN) -> None:
    """Create the stream, or check that the existing one matches; a mismatch is an error."""
    wanted = spec.config(plan.replicas)
    try:
        info = await patiently(lambda: js.stream_info(spec.name))
    except NotFoundError:
        try:
            await creating(lambda: js.add_stream(config=wanted), f"stream {spec.name}", wanted.num_replicas or 1)
        except APIError as exc:
            if exc.err_code != _SUBJECTS_OVERLAP:
                raise
            owners = await _owners(js, spec.subjects)
            raise StreamConfigConflict(
                f"stream {spec.name} cannot be created: its subjects {list(spec.subjects)} overlap "
                f"with existing stream(s) {owners or '?'}; remove or narrow those deliberately"
            ) from exc
        return
    problems = _differences(wanted, info.config)
    if problems:
        raise StreamConfigConflict(
            f"stream {spec.name} exists with another configuration ({'; '.join(problems)}); "
            "Aurora will not change a stream that holds data: migrate or delete it deliberately"
        )


async def _owners(js: JetStreamContext, subjects: tuple[str, ...]) -> list[str]:
    owners: list[str] = []
    for subject in subjects:
        with suppress(Exception):  # only to word the error better; the conflict stands anyway
            owners.append(await js.find_stream_name_by_subject(subject))
    return sorted(set(owners))


async def ensure_streams(js: JetStreamContext, specs: list[StreamSpec], *, plan: StreamPlan = DEFAULT_PLAN) -> None:
    for spec in specs:
        await ensure_stream(js, spec, plan=plan)


async def _bucket(js: JetStreamContext, kv: KeyValue, name: str, plan: StreamPlan, *,
                  within: float = 10.0) -> Bucket:
    # On a cluster a bucket just created can be "not found" for a moment: the server answering
    # has the assignment but not the stream yet. Asked again, it is there.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        try:
            status = await patiently(kv.status)
        except NotFoundError:
            if loop.time() >= deadline:
                raise
            await asyncio.sleep(0.1)
            continue
        return Bucket(js, name, direct=bool(status.stream_info.config.allow_direct), plan=plan)


async def open_bucket(js: JetStreamContext, name: str, *, plan: StreamPlan = DEFAULT_PLAN) -> Bucket:
    """An existing KV bucket, never created (a reader's; `NotFoundError` when there is none)."""
    info = await js.stream_info(f"KV_{name}")
    return Bucket(js, name, direct=bool(info.config.allow_direct), plan=plan)


async def ensure_bucket(js: JetStreamContext, spec: BucketSpec, *, plan: StreamPlan = DEFAULT_PLAN) -> Bucket:
    """Open a KV bucket, creating it if needed; an existing one must keep its history, ttl and
    replicas."""
    wanted_replicas = plan.replicas
    try:
        kv = await patiently(lambda: js.key_value(spec.name))
    except BucketNotFoundError:
        created = await creating(lambda: js.create_key_value(
            config=KeyValueConfig(
                bucket=spec.name,
                description=spec.description or None,
                history=spec.history,
                ttl=spec.ttl or None,
                storage=StorageType.FILE,
                replicas=wanted_replicas,
                # Read by direct get on one server (its own answer, without the JetStream API's
                # JSON and base64: a third less server CPU per read, docs/benchmarks.md). On a
                # cluster every replica answers direct gets, one behind its leader too: reads
                # there stay message gets, answered by the leader.
                direct=wanted_replicas == 1,
            )
        ), f"bucket {spec.name}", wanted_replicas)
        return await _bucket(js, created, spec.name, plan)
    status = await patiently(kv.status)
    found_history = status.history or 1
    found_ttl = float(status.ttl or 0)
    found_replicas = status.stream_info.config.num_replicas or 1
    if found_history != spec.history or found_ttl != float(spec.ttl) or found_replicas != wanted_replicas:
        raise StreamConfigConflict(
            f"bucket {spec.name} exists with history={found_history}, ttl={found_ttl}, replicas={found_replicas}; "
            f"Aurora needs history={spec.history}, ttl={spec.ttl}, replicas={wanted_replicas} "
            "(AURORA_STREAM_REPLICAS)"
        )
    return Bucket(js, spec.name, direct=bool(status.stream_info.config.allow_direct), plan=plan)


# --- routing: runs, bindings, agents, pipelines, route traces, large run events -------------


def runs_stream(subjects: Subjects) -> StreamSpec:
    """Routed runs: a work queue; `Nats-Msg-Id` = run id, so a redelivered event adds no run."""
    return StreamSpec(
        name=subjects.stream("RUNS"),
        subjects=(subjects.runs_all,),
        retention=RetentionPolicy.WORK_QUEUE,
        duplicate_window=600.0,
        description="routed runs for pipelines and agents, consumed by runners",
    )


def bindings_bucket(subjects: Subjects) -> BucketSpec:
    return BucketSpec(name=subjects.stream("BINDINGS"), history=5, description="event bindings")


def agents_bucket(subjects: Subjects) -> BucketSpec:
    return BucketSpec(name=subjects.stream("AGENTS"), history=5, description="agent specs")


def skills_bucket(subjects: Subjects) -> BucketSpec:
    """Skills by id, written by the gateway (the versions are in each value's `history`)."""
    return BucketSpec(name=subjects.stream("SKILLS"), history=5, description="skills: agents' guidance")


def pipelines_bucket(subjects: Subjects) -> BucketSpec:
    return BucketSpec(name=subjects.stream("PIPELINES"), history=5, description="pipeline specs")


def routes_bucket(subjects: Subjects) -> BucketSpec:
    """One route trace per event, keyed by message id; kept as long as the events."""
    return BucketSpec(name=subjects.stream("ROUTES"), ttl=7 * DAY, description="route traces")


def run_records_bucket(subjects: Subjects) -> BucketSpec:
    """The router's record of every run it dispatched, keyed by run id (the same run, the same record); the
    gateway reads the agent, target and approver of a call from it. Kept as long as tasks."""
    return BucketSpec(name=subjects.stream("RUN_RECORDS"), ttl=30 * DAY, description="dispatched runs")


def run_events_store(subjects: Subjects) -> BucketSpec:
    """Object Store for events too large to travel inline in a run."""
    return BucketSpec(name=subjects.stream("RUN_EVENTS"), ttl=7 * DAY,
                      description="large events referenced by runs")


async def ensure_object_store(js: JetStreamContext, spec: BucketSpec, *,
                              plan: StreamPlan = DEFAULT_PLAN) -> ObjectStore:
    """Open an Object Store bucket, creating it if needed."""
    wanted_replicas = plan.replicas
    try:
        return await patiently(lambda: js.object_store(spec.name))
    except BucketNotFoundError:
        return await creating(lambda: js.create_object_store(
            spec.name,
            config=ObjectStoreConfig(description=spec.description or None, ttl=spec.ttl or None,
                                     storage=StorageType.FILE, replicas=wanted_replicas),
        ), f"object store {spec.name}", wanted_replicas)


# --- tool pool: systems, tool definitions, approvals, audit ----------------------------------


def systems_bucket(subjects: Subjects) -> BucketSpec:
    return BucketSpec(name=subjects.stream("SYSTEMS"), history=5, description="registered systems")


def tools_bucket(subjects: Subjects) -> BucketSpec:
    """Tool definitions by name (dots are fine in KV keys); history keeps earlier versions."""
    return BucketSpec(name=subjects.stream("TOOLS"), history=10, description="tool definitions")


def approvals_bucket(subjects: Subjects) -> BucketSpec:
    """Approvals; consuming one is a compare-and-set on its revision."""
    return BucketSpec(name=subjects.stream("APPROVALS"), history=5, description="approvals")


def users_bucket(subjects: Subjects) -> BucketSpec:
    """People and their roles (`aurora users`): written by the gateway, read by every service
    that checks a person's request."""
    return BucketSpec(name=subjects.stream("USERS"), history=10, description="people and their roles")


def approval_policies_bucket(subjects: Subjects) -> BucketSpec:
    """`kind: ApprovalPolicy` documents: who may decide which approvals (the gateway's)."""
    return BucketSpec(name=subjects.stream("APPROVAL_POLICIES"), history=10, description="approval policies")


def audit_stream(subjects: Subjects) -> StreamSpec:
    return StreamSpec(
        name=subjects.stream("AUDIT"),
        subjects=(subjects.audit_all,),
        max_age=90 * DAY,
        description="one record per tool call",
    )


# --- runners: tasks ---------------------------------------------------------------------------


def tasks_bucket(subjects: Subjects) -> BucketSpec:
    """One task per run id (create-only); every change a compare-and-set on its revision."""
    return BucketSpec(name=subjects.stream("TASKS"), history=1, ttl=30 * DAY, description="runner tasks")


# --- gateway: the call ledger -----------------------------------------------------------------

CALL_LEDGER_TTL = 30 * DAY  # as long as tasks: a task that can still be recovered finds its calls


def call_ledger_bucket(subjects: Subjects, ttl: float = CALL_LEDGER_TTL) -> BucketSpec:
    """The gateway's record of every side-effecting call, keyed by call id: `executing` before
    the app is called, `done` with the result after. Written by the gateway alone."""
    return BucketSpec(name=subjects.stream("CALL_LEDGER"), history=1, ttl=ttl, description="tool call ledger")


# --- schedules: the Schedule resources, and their timers and ticks ---------------------------


def schedules_bucket(subjects: Subjects) -> BucketSpec:
    return BucketSpec(name=subjects.stream("SCHEDULES"), history=5, description="schedules")


def schedule_timers_stream(subjects: Subjects) -> StreamSpec:
    """Each schedule's next tick as a one-shot JetStream timer (`<prefix>.sched.timer.<id>`, one
    per subject by rollup), and the ticks the server fires from them (`<prefix>.sched.tick.<id>`,
    kept a day: what a scheduler that was down finds to catch up on)."""
    return StreamSpec(
        name=subjects.stream("SCHEDULE_TIMERS"),
        subjects=(subjects.schedules_all,),
        duplicate_window=600.0,
        timers=True,
        description="schedule timers (Nats-Schedule @at) and the ticks they fire",
    )
