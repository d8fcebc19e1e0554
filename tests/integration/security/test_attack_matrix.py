"""Every identity against the attack matrix (attack_matrix.py), on a real nats-server running
deploy/nats-auth.conf, with the platform's streams and durables created by the services' own
code as their own users.

A probe is *refused* when nats-server reports the permissions violation for its subject, and
*allowed* when the server answered it (for what a service must do: answered without an error)
or, for a publish that gets no answer (an ack), when the answer to a request sent after it came
back with no violation: the server handles a connection's messages in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from services.mcp_edge.sessions import sessions_bucket as edge_sessions_bucket
from services.mcp_edge.tokens import tokens_bucket as edge_tokens_bucket
from services.router.stores import open_stores as open_router_stores
from services.runner.stores import open_stores as open_runner_stores
from services.scheduler.timers import Timers
from shared.config.stream_plan import StreamPlan
from shared.jetstream.consumers import ensure_durable
from shared.jetstream.kvwatch import BucketWatch
from shared.jetstream.streams import (
    agents_bucket,
    approvals_bucket,
    apps_bucket,
    audit_stream,
    call_ledger_bucket,
    ensure_bucket,
    ensure_streams,
    fabric_streams,
    runs_stream,
    schedule_timers_stream,
    schedules_bucket,
    systems_bucket,
    tools_bucket,
)
from tests.harness.processes import REPO
from tests.harness.secure_nats import Connect, Session
from tests.integration.security.attack_matrix import (
    ALLOWED,
    CONSUMER_DURABLE,
    IDENTITIES,
    MATRIX,
    NONE,
    REFUSED,
    SUBJECTS,
    Durable,
    platform_durables,
    render_markdown,
)

Probe = Callable[[Session], Awaitable[str]]
LEDGER = call_ledger_bucket(SUBJECTS).name


def schedule_timer_stream_name() -> str:
    return schedule_timers_stream(SUBJECTS).name


def _violation(subject: str) -> str:
    return f'permissions violation for publish to "{subject}"'.lower()


def _refused_since(session: Session, start: int, subject: str | None = None) -> bool:
    wanted = _violation(subject) if subject else "permissions violation"
    return any(wanted in str(error).lower() for error in session.errors[start:])


async def _refused_first(session: Session, start: int, work: asyncio.Future[Any], subject: str | None = None) -> bool:
    """Whether the server refused (since error `start`) before `work` finished; a refusal is the
    verdict already, so `work` is cancelled rather than left to run into its timeout."""
    while not work.done():
        if _refused_since(session, start, subject):
            work.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await work
            return True
        await asyncio.sleep(0.005)
    return False


def _both_reads(bucket: str, key_subject: str) -> list[Probe]:
    """A bucket's entry read by message get and by direct get."""
    return [request(f"$JS.API.STREAM.MSG.GET.KV_{bucket}", {"last_by_subj": key_subject}, must_succeed=False),
            request(f"$JS.API.DIRECT.GET.KV_{bucket}.{key_subject}", must_succeed=False)]


def request(subject: str, body: Any = None, *, must_succeed: bool = True) -> Probe:
    payload = b"" if body is None else json.dumps(body).encode()

    async def probe(session: Session) -> str:
        start = len(session.errors)
        reply = asyncio.ensure_future(session.nc.request(subject, payload, timeout=5))
        if await _refused_first(session, start, reply, subject):
            return REFUSED
        try:
            msg = reply.result()
        except (NatsTimeoutError, NoRespondersError, asyncio.CancelledError) as exc:
            return f"unanswered ({type(exc).__name__})"
        if must_succeed and msg.data.startswith(b"{") and "error" in json.loads(msg.data):
            return f"answered with an error: {msg.data[:300]!r}"
        return ALLOWED

    probe.__qualname__ = subject
    return probe


def publish(subject: str) -> Probe:
    async def probe(session: Session) -> str:
        start = len(session.errors)
        await session.nc.publish(subject, b"")
        # The answer to a later request is the sign the server has handled the publish (a
        # flush is not: its PONG may answer an earlier PING whose wait was given up).
        await session.nc.request("$JS.API.INFO", b"", timeout=5)
        return REFUSED if _refused_since(session, start, subject) else ALLOWED

    probe.__qualname__ = subject
    return probe


def subscribe(subject: str) -> Probe:
    async def probe(session: Session) -> str:
        start = len(session.errors)
        sub = await session.nc.subscribe(subject)
        # As for a publish: the answer to a later request says the server has handled the SUB.
        await session.nc.request("$JS.API.INFO", b"", timeout=5)
        refused = any(f'permissions violation for subscription to "{subject}"'.lower() in str(error).lower()
                      for error in session.errors[start:])
        await sub.unsubscribe()
        return REFUSED if refused else ALLOWED

    probe.__qualname__ = f"SUB {subject}"
    return probe


def code(run: Callable[[Session], Awaitable[object]]) -> Probe:
    """The services' own code as that user: allowed when it finished and nothing was refused."""
    async def probe(session: Session) -> str:
        start = len(session.errors)
        done = asyncio.ensure_future(asyncio.wait_for(run(session), 15))
        if await _refused_first(session, start, done):
            return REFUSED
        try:
            done.result()
        except Exception as exc:
            if _refused_since(session, start):
                return REFUSED
            return f"failed: {type(exc).__name__}: {exc}"
        return REFUSED if _refused_since(session, start) else ALLOWED

    return probe


# --- the probes of each row -------------------------------------------------------------------

async def _own_streams(session: Session) -> None:
    js = session.nc.jetstream()
    user = session.user
    if user in ("event-bridge", "app-supervisor", "mcp-gateway", "operator"):
        await ensure_streams(js, fabric_streams(SUBJECTS))
    if user in ("app-supervisor", "mcp-gateway"):
        await ensure_bucket(js, apps_bucket(SUBJECTS))
    if user == "mcp-gateway":
        await ensure_streams(js, [audit_stream(SUBJECTS)])
        for bucket in (approvals_bucket, tools_bucket, systems_bucket, agents_bucket, call_ledger_bucket):
            await ensure_bucket(js, bucket(SUBJECTS))
    if user == "router":
        await open_router_stores(js, SUBJECTS)
    if user == "runner":
        await open_runner_stores(js, SUBJECTS)
    if user == "scheduler":
        await ensure_streams(js, [*fabric_streams(SUBJECTS), schedule_timers_stream(SUBJECTS)])
        await ensure_bucket(js, schedules_bucket(SUBJECTS))
    if user == "mcp-edge":
        for bucket in (edge_tokens_bucket, edge_sessions_bucket, approvals_bucket, tools_bucket, agents_bucket):
            await ensure_bucket(js, bucket(SUBJECTS))


def _owned(user: str) -> list[Durable]:
    return [d for d in [*platform_durables(), CONSUMER_DURABLE] if d.owner == user]


def _others(user: str) -> list[Durable]:
    return [d for d in platform_durables() if d.owner != user]


def _changed(durable: Durable, *, named: bool = True) -> dict[str, Any]:
    """The durable's config, re-described (a field the server lets an update change); the legacy
    create carries the durable's name in `durable_name` only, as the attack did."""
    config = durable.config.evolve(name=durable.name if named else None, description="taken over")
    return {"stream_name": durable.stream, "config": config.as_dict()}


def _scoped_subject(durable: Durable) -> str:
    subject = f"$JS.API.CONSUMER.CREATE.{durable.stream}.{durable.name}"
    return f"{subject}.{durable.config.filter_subject}" if durable.config.filter_subject else subject


async def _pull_own(session: Session) -> None:
    js = session.nc.jetstream()
    for durable in _owned(session.user):
        sub = await js.pull_subscribe_bind(durable.name, stream=durable.stream)
        try:
            (msg,) = await sub.fetch(1, timeout=5)
            await msg.ack_sync(timeout=5)
        finally:
            await sub.unsubscribe()


@dataclass
class Context:
    ephemerals: dict[str, str] = field(default_factory=dict)  # user → its short-lived consumer
    events_config: dict[str, Any] = field(default_factory=dict)  # AMP_EVENTS as it is (an update's body)


def _ephemeral(user: str, ctx: Context) -> Probe:
    name = f"{user}_eph_{uuid.uuid4().hex}"
    ctx.ephemerals[user] = name
    config = ConsumerConfig(name=name, ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.NEW,
                            filter_subject=SUBJECTS.events_all, inactive_threshold=120.0)
    return request(f"$JS.API.CONSUMER.CREATE.AMP_EVENTS.{name}.{SUBJECTS.events_all}",
                   {"stream_name": "AMP_EVENTS", "config": config.as_dict()})


def _bucket_of(user: str) -> str:
    return {"router": "AMP_BINDINGS", "runner": "AMP_AGENTS", "scheduler": "AMP_SCHEDULES"}.get(user, "AMP_TOOLS")


async def _kv_watch(session: Session) -> None:
    """The services' own watcher (shared/jetstream/kvwatch.py, as KvMirror and read_all use it)."""
    async with BucketWatch(session.nc.jetstream(), _bucket_of(session.user), plan=StreamPlan.of(1, session.user)):
        pass


def _ordered(session: Session) -> Probe:
    """What nats-py's `kv.watch` sends: an ordered push consumer through the bare create."""
    bucket = _bucket_of(session.user)
    stream = f"KV_{bucket}"
    config = ConsumerConfig(deliver_subject=session.nc.new_inbox(), ack_policy=AckPolicy.NONE,
                            deliver_policy=DeliverPolicy.LAST_PER_SUBJECT, filter_subject=f"$KV.{bucket}.>",
                            max_deliver=1, flow_control=True, idle_heartbeat=5.0, inactive_threshold=5.0,
                            mem_storage=True, num_replicas=1)
    return request(f"$JS.API.CONSUMER.CREATE.{stream}", {"stream_name": stream, "config": config.as_dict()})


# A stream whose messages each identity writes (its bucket, or the events for the bridge and the
# operator) and, where it may, watches.
WRITTEN = {"event-bridge": "AMP_EVENTS", "app-supervisor": "KV_AMP_APPS", "mcp-gateway": "KV_AMP_TOOLS",
           "router": "KV_AMP_BINDINGS", "runner": "KV_AMP_TASKS", "scheduler": "KV_AMP_SCHEDULES",
           "mcp-edge": "KV_AMP_EDGE_TOKENS", "operator": "AMP_EVENTS"}


def _push_onto_request(user: str, stream: str) -> Probe:
    """The attack: a push consumer named like the identity's own watchers (so the create is the
    name-scoped one it may send), delivering onto the runners' sampling endpoint."""
    name = f"{user}_eph_{uuid.uuid4().hex}"
    config = ConsumerConfig(name=name, deliver_subject=SUBJECTS.model_sample, ack_policy=AckPolicy.NONE,
                            inactive_threshold=2.0)
    return request(f"$JS.API.CONSUMER.CREATE.{stream}.{name}", {"stream_name": stream, "config": config.as_dict()})


def probes(key: str, session: Session, ctx: Context) -> list[Probe]:
    user = session.user
    others = _others(user)
    if key == "own_streams":
        return [code(_own_streams)] if user != "consumer" else []
    if key == "own_durable":
        return [code(lambda s, d=d: ensure_durable(s.nc.jetstream(), d.stream, d.config)) for d in _owned(user)]
    if key == "pull_own":
        return [code(_pull_own)] if _owned(user) else []
    if key == "ephemeral":
        return [_ephemeral(user, ctx)]
    if key == "kv_watch":
        return [code(_kv_watch)]
    if key == "ordered":
        return [_ordered(session)]
    if key == "legacy_create":
        # The server itself may refuse a durable there (it does since 2.11): only the
        # permission is tested, so any answer counts as allowed.
        return [request(f"$JS.API.CONSUMER.CREATE.{d.stream}", _changed(d, named=False), must_succeed=False)
                for d in others]
    if key == "scoped_update":
        return [request(_scoped_subject(d), _changed(d)) for d in others]
    if key == "durable_create":
        return [request(f"$JS.API.CONSUMER.DURABLE.CREATE.{d.stream}.{d.name}",
                        {"stream_name": d.stream, "config": d.config.evolve(description="taken over").as_dict()})
                for d in others]
    if key == "steal":
        return [request(f"$JS.API.CONSUMER.MSG.NEXT.{d.stream}.{d.name}", {"batch": 1, "no_wait": True},
                        must_succeed=False) for d in others]
    if key == "ack_other":
        return [publish(f"$JS.ACK.{d.stream}.{d.name}.1.1.1.1.0") for d in others]
    if key == "info_other":
        return [request(f"$JS.API.CONSUMER.INFO.{d.stream}.{d.name}") for d in others]
    if key == "pause":
        return [request(f"$JS.API.CONSUMER.PAUSE.{d.stream}.{d.name}", {"pause_until": "2000-01-01T00:00:00Z"})
                for d in others]
    if key == "delete":
        if user == "operator":  # its own short-lived consumer: the platform's stay for the other rows
            return [request(f"$JS.API.CONSUMER.DELETE.AMP_EVENTS.{ctx.ephemerals[user]}")]
        targets = [*_owned(user), *(d for d in others if d.name == "gateway-chat-approvals")]
        return [request(f"$JS.API.CONSUMER.DELETE.{d.stream}.{d.name}") for d in targets]
    if key == "list":
        return [request("$JS.API.CONSUMER.NAMES.AMP_EVENTS", {}), request("$JS.API.CONSUMER.LIST.AMP_EVENTS", {})]
    if key == "inbox_stream":
        victim = "router" if user == "runner" else "runner"
        name = f"STEAL_{user.upper().replace('-', '_')}"
        return [request(f"$JS.API.STREAM.CREATE.{name}",
                        {"name": name, "subjects": [f"_INBOX_{victim}.>"], "storage": "memory"})]
    if key == "reshape":
        return [request("$JS.API.STREAM.UPDATE.AMP_EVENTS", ctx.events_config),
                request("$JS.API.STREAM.PURGE.AMP_EVENTS", {"filter": "amp.evt.nobody.here"})]
    if key == "ledger_write":  # a JetStream publish is answered (an ack) when it is let through
        return [request(f"$KV.{LEDGER}.calls.matrix-{user}", {"state": "done"})]
    if key == "tasks_write":  # as the ledger: an ack when let through
        return [request(f"$KV.AMP_TASKS.matrix-{user}", {"state": "running"})]
    # Any answer (the entry, or "not found") is the server's, not a refusal. Buckets on one server
    # are read by direct get, so each read is tried both ways.
    if key == "ledger_read":
        return _both_reads(LEDGER, f"$KV.{LEDGER}.calls.matrix-mcp-gateway")
    if key == "records_read":
        return _both_reads("AMP_RUN_RECORDS", "$KV.AMP_RUN_RECORDS.x")
    if key == "edge_read":
        return [*_both_reads("AMP_EDGE_TOKENS", "$KV.AMP_EDGE_TOKENS.x"),
                request("$JS.API.STREAM.INFO.KV_AMP_EDGE_SESSIONS", {"subjects_filter": "$KV.AMP_EDGE_SESSIONS.>"})]
    if key == "push_written":
        return [] if user == "consumer" else [_push_onto_request(user, WRITTEN[user])]
    if key == "push_events":
        return [_push_onto_request(user, "AMP_EVENTS")]
    if key == "other_streams":
        if user != "consumer":
            return []
        return [request("$JS.API.STREAM.INFO.AMP_AUDIT"), request("$JS.API.STREAM.MSG.GET.AMP_DLQ", {"seq": 1}),
                request("$JS.API.CONSUMER.CREATE.AMP_DLQ.consumer_dlq",
                        {"stream_name": "AMP_DLQ", "config": {"name": "consumer_dlq", "ack_policy": "none"}}),
                request("$JS.API.DIRECT.GET.KV_AMP_APPROVALS", {"last_by_subj": "$KV.AMP_APPROVALS.x"})]
    if key == "records_write":
        return [publish("$KV.AMP_RUN_RECORDS.run.matrix-written")]
    if key == "runs_publish":
        return [publish(SUBJECTS.run("agent", "matrix-published"))]
    if key == "advisories":
        return [subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.AMP_RUNS.*"),
                subscribe("$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.KV_AMP_RUN_RECORDS.*"),
                subscribe("$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED.AMP_SIGNALS.*")]
    if key == "work_get":
        return [request(f"$JS.API.STREAM.MSG.GET.{stream}", {"seq": 1}, must_succeed=False)
                for stream in ("AMP_RUNS", "AMP_SIGNALS")]
    if key == "dlq_other_stage":
        own = {"event-bridge": "event_bridge", "mcp-gateway": "mcp_gateway", "router": "router", "runner": "runner"}
        return [publish(SUBJECTS.dlq(stage)) for stage in ("event_bridge", "router", "runner", "mcp_gateway")
                if stage != own.get(user)]
    if key == "dlq_admin":
        return [request("$JS.API.STREAM.MSG.GET.AMP_DLQ", {"seq": 1}, must_succeed=False),
                request("$JS.API.STREAM.MSG.DELETE.AMP_DLQ", {"seq": 1_000_000}, must_succeed=False),
                request("$JS.API.STREAM.PURGE.AMP_DLQ", {"filter": "amp.dlq.nobody"})]
    if key == "dlq_replay":
        if user not in ("operator", "consumer"):
            return []
        return [publish(SUBJECTS.event("im.polaris.qq", "message.received")),
                publish(SUBJECTS.signal("im.polaris.qq", "observed")), publish(SUBJECTS.run("agent", "matrix"))]
    if key == "audit_refusal":  # a JetStream publish is answered (an ack) when it is let through
        return [] if user in ("operator", "consumer") else [request(SUBJECTS.audit_refused(user), {"status": "denied"})]
    if key == "audit_forge":
        other = "runner" if user != "runner" else "router"
        return [request(SUBJECTS.audit("im.polaris.qq"), {"status": "ok", "executed": True}),
                request(SUBJECTS.audit_refused(other), {"status": "denied"})]
    if key == "receipt_publish":
        return [publish(SUBJECTS.mcp("demo.notes", "default", "rcpt"))]
    if key == "receipt_hear":
        return [subscribe(SUBJECTS.mcp("demo.notes", "default", "rcpt"))]
    if key == "platform_forge":
        if user not in ("operator", "consumer"):
            return []
        return [publish(SUBJECTS.event("aurora.gateway", "approval.granted")),
                publish(SUBJECTS.signal("aurora.gateway", "platform_event")),
                publish(SUBJECTS.event("aurora.runner", "task.failed")),
                publish(SUBJECTS.event("aurora.scheduler", "schedule.triggered")),
                publish(SUBJECTS.signal("aurora.scheduler", "platform_event")),
                publish(SUBJECTS.signal("aurora.edge", "platform_event")),  # an A2A message is the edge's
                publish(SUBJECTS.event("aurora.edge", "a2a.message.received")),
                publish(SUBJECTS.schedule_tick("matrix")), publish(SUBJECTS.schedule_timer("matrix"))]
    raise AssertionError(f"no probes for row {key!r}")


# --- the test ---------------------------------------------------------------------------------

async def _feed(sessions: dict[str, Session]) -> None:
    """One message for every durable to pull: an answer event (router, chat answers and the
    runners' resume consumer all take `interaction.submitted`), a signal, a run, an audit record,
    a task's revision."""
    event = SUBJECTS.event("im.polaris.qq", "interaction.submitted")
    await sessions["event-bridge"].nc.jetstream().publish(event, b"{}")
    await sessions["operator"].nc.jetstream().publish(SUBJECTS.signal("im.polaris.qq", "native_event"), b"{}")
    await sessions["router"].nc.jetstream().publish("$KV.AMP_RUN_RECORDS.run.matrix", b"{}")  # a run
    await sessions["operator"].nc.jetstream().publish(SUBJECTS.run("agent", "matrix"), b"{}")  # an older run
    await sessions["mcp-gateway"].nc.jetstream().publish(SUBJECTS.audit("im.polaris.qq"), b"{}")  # an audit record
    await sessions["runner"].nc.jetstream().publish("$KV.AMP_TASKS.matrix", b"{}")  # a task's revision
    # a tick: the scheduler arms a timer that is due now, and the server fires it
    timers = Timers(sessions["scheduler"].nc.jetstream(), SUBJECTS, schedule_timer_stream_name(), tick_ttl_seconds=60)
    await timers.arm("matrix", datetime.now(UTC))


async def test_every_identity_can_do_its_job_and_nothing_the_matrix_refuses(connect: Connect) -> None:
    sessions = {user: await connect(user) for user in IDENTITIES}
    # An AMP_RUNS an older deployment left (nothing creates it since issue 38): the runners drain it.
    await ensure_streams(sessions["operator"].nc.jetstream(), [runs_stream(SUBJECTS)])
    ctx = Context()
    mismatches: list[str] = []
    for key, (text, expected) in MATRIX.items():
        if key == "pull_own":
            await _feed(sessions)
        if key == "reshape":
            info = await sessions["operator"].nc.jetstream().stream_info("AMP_EVENTS")
            ctx.events_config = info.config.as_dict()
        for user in IDENTITIES:
            session = sessions[user]
            tried = probes(key, session, ctx)
            found = [await probe(session) for probe in tried]
            want = expected[user]
            if want == NONE:
                assert not found, f"{key}: {user} has no expectation but {len(found)} probe(s)"
                continue
            assert found, f"{key}: no probe for {user}"
            wrong = [f"{result} ({probe.__qualname__})" for probe, result in zip(tried, found, strict=True)
                     if result != want]
            if wrong:
                mismatches.append(f"{user}: {text}: expected {want}, got {wrong}")
        if key == "inbox_stream":  # a capture (the operator's, or one let through) must not outlive its row
            ojs = sessions["operator"].nc.jetstream()
            for name in await ojs.streams_info():
                if name.config.name and name.config.name.startswith("STEAL_"):
                    await ojs.delete_stream(name.config.name)
    assert not mismatches, "\n".join(mismatches)


def test_the_matrix_covers_every_identity_and_every_platform_durable() -> None:
    assert all(set(expected) == set(IDENTITIES) for _, expected in MATRIX.values())
    owners = {d.owner for d in platform_durables()}
    assert owners == {"event-bridge", "router", "mcp-gateway", "runner", "scheduler"}
    config = (REPO / "deploy" / "nats-auth.conf").read_text()
    # Where an identity may name consumers freely (`<stream>.*`), each platform durable on that
    # stream must be denied to it by name: a durable missing here would be open to it.
    for durable in platform_durables():
        assert f'"$JS.API.CONSUMER.MSG.NEXT.{durable.stream}.{durable.name}"' in config, durable.name


@pytest.mark.parametrize("page", ["docs/reference/permissions.md"])
def test_the_docs_show_the_matrix_as_tested(page: str) -> None:
    assert render_markdown() in (REPO / page).read_text(), (
        f"{page}'s table differs from attack_matrix.py: "
        "paste `python -m tests.integration.security.attack_matrix`")
