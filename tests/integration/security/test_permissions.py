"""The runner's NATS user, against a real nats-server running deploy/nats-auth.conf.

A compromised or buggy runner must not talk MCP to apps, answer tool calls as the gateway,
grant approvals, write tool definitions or other services' state, or publish signals for
anyone but `aurora.runner`; it must still do everything the runner's own code does.
"""

from __future__ import annotations

import json

import msgspec
import pytest
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from nats.js.errors import KeyNotFoundError

from services.runner.config import RunnerConfig
from services.runner.stores import ensure_runs_consumer, open_stores
from services.runner.tasks.call_audit import JetStreamAudit
from services.runner.tasks.store import TaskStore
from services.runner.tools.history import StreamHistory
from shared.clock import now_iso
from shared.config.stream_plan import StreamPlan
from shared.contracts.audit import AuditRecord
from shared.contracts.envelope import EventEnvelope
from shared.contracts.run import ObjectRef, RunPayload, RunTarget
from shared.contracts.signals import RUNNER_APP, NativeEventSignal, PlatformEventSignal
from shared.contracts.subjects import Subjects
from shared.jetstream.consumers import ephemeral_name
from shared.jetstream.kvmirror import KvMirror, read_all
from shared.jetstream.run_events import run_event
from shared.jetstream.run_records import CREATE_ONLY, run_record_subject
from shared.jetstream.streams import (
    agents_bucket,
    approvals_bucket,
    audit_stream,
    ensure_bucket,
    ensure_object_store,
    ensure_streams,
    fabric_streams,
    run_events_store,
    run_records_bucket,
    systems_bucket,
    tasks_bucket,
    tools_bucket,
)
from shared.nats import write_through
from shared.nats.admin_service import start_admin_service
from shared.nats.signal_publisher import new_signal_id, publish_signal
from tests.harness.secure_nats import Connect, Session, request_until_answered
from tests.harness.waiting import poll

SUBJECTS = Subjects("amp")
RUNNER = StreamPlan.of(1, "runner")  # what the runner service creates is named after its user
REFUSED = (NatsTimeoutError, TimeoutError, NoRespondersError)  # a refused request gets no answer


@pytest.fixture
async def platform(connect: Connect) -> None:
    """Streams and buckets created by the services that own them, with their own users."""
    bridge, gateway, router = await connect("event-bridge"), await connect("mcp-gateway"), await connect("router")
    await ensure_streams(bridge.nc.jetstream(), fabric_streams(SUBJECTS))
    gjs = gateway.nc.jetstream()
    await ensure_streams(gjs, [audit_stream(SUBJECTS)])
    for bucket in (approvals_bucket, tools_bucket, systems_bucket, agents_bucket):
        await ensure_bucket(gjs, bucket(SUBJECTS))
    await ensure_bucket(router.nc.jetstream(), run_records_bucket(SUBJECTS))  # where runs are kept
    for session in (bridge, gateway, router):
        await session.clean()


@pytest.fixture
async def runner(connect: Connect, platform: None) -> Session:
    return await connect("runner")


async def test_the_runner_cannot_speak_mcp_to_an_app(connect: Connect, runner: Session) -> None:
    supervisor = await connect("app-supervisor")
    c2s = SUBJECTS.mcp("im.polaris.qq", "default", "c2s")
    relayed = await supervisor.nc.subscribe(c2s)
    await write_through.flush(supervisor.nc)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "send_message"}}
    await runner.nc.publish(c2s, json.dumps(call).encode())
    await runner.refused(c2s)
    with pytest.raises(NatsTimeoutError):
        await relayed.next_msg(timeout=0.3)  # the app's stdin never saw it
    await runner.nc.subscribe(SUBJECTS.mcp("im.polaris.qq", "default", "s2c"))
    await runner.refused("amp.mcp.im_polaris_qq.default.s2c", action="subscription")
    await supervisor.clean()


async def test_the_runner_cannot_answer_tool_calls_as_the_gateway(connect: Connect, runner: Session) -> None:
    await runner.nc.subscribe(SUBJECTS.tool_call, queue="q")
    await runner.refused(SUBJECTS.tool_call, action="subscription")
    operator = await connect("operator")
    with pytest.raises(NoRespondersError):  # nobody took the subject: the runner's subscription is not there
        await operator.nc.request(SUBJECTS.tool_call, b"{}", timeout=1)


async def test_the_runner_calls_tools_by_requesting_them(connect: Connect, runner: Session) -> None:
    gateway = await connect("mcp-gateway")

    async def answer(msg: object) -> None:
        await msg.respond(b'{"payload": {"status": "ok"}}')  # type: ignore[attr-defined]

    await gateway.nc.subscribe(SUBJECTS.tool_call, queue="q", cb=answer)
    await write_through.flush(gateway.nc)
    reply = await request_until_answered(runner, SUBJECTS.tool_call, b'{"payload": {"tool": "x"}}')
    assert json.loads(reply.data) == {"payload": {"status": "ok"}}
    await runner.clean()
    await gateway.clean()


@pytest.mark.parametrize("bucket", [approvals_bucket, tools_bucket, systems_bucket, agents_bucket])
async def test_the_runner_cannot_write_approvals_tools_systems_or_agents(
        connect: Connect, runner: Session, bucket: object) -> None:
    name = bucket(SUBJECTS).name  # type: ignore[operator]
    # The runner may not even look at these buckets (stream info), so the put is a raw publish.
    with pytest.raises(REFUSED):
        await runner.nc.jetstream(timeout=0.5).publish(f"$KV.{name}.apr-1", json.dumps({"state": "granted"}).encode())
    await runner.refused(f"$KV.{name}.apr-1")
    operator_kv = await (await connect("operator")).nc.jetstream().key_value(name)
    with pytest.raises(KeyNotFoundError):
        await operator_kv.get("apr-1")


async def test_the_runner_cannot_grant_or_deny_approvals(runner: Session) -> None:
    for verb in ("grant", "deny"):
        with pytest.raises(REFUSED):
            await runner.nc.request(SUBJECTS.admin("approvals", verb), b'{"id": "apr-1"}', timeout=0.3)
        await runner.refused(f"amp.admin.approvals.{verb}")
    await runner.nc.subscribe(SUBJECTS.admin("approvals", "grant"))  # nor pose as the gateway's endpoint
    await runner.refused("amp.admin.approvals.grant", action="subscription")


async def test_the_runner_publishes_its_own_platform_signals_and_no_other(runner: Session) -> None:
    """Its `interaction.requested.*` signals (its task events the bridge makes from its tasks bucket;
    a `task.*` signal is still its own to send, as an older runner in an upgrade does)."""
    js = runner.nc.jetstream(timeout=0.5)
    task_event = PlatformEventSignal(signal_id=new_signal_id(), app=RUNNER_APP, observed_at=now_iso(),
                                     type="task.succeeded", data={"task_id": "t-1"})
    ack = await publish_signal(js, SUBJECTS, task_event)
    assert ack.stream == "AMP_SIGNALS"
    await runner.clean()
    as_gateway = msgspec.structs.replace(task_event, signal_id=new_signal_id(), app="aurora.gateway")
    as_app = NativeEventSignal(signal_id=new_signal_id(), app="im.polaris.qq", observed_at=now_iso(),
                               event={"payload": {"type": "message.received"}})
    for forged in (as_gateway, as_app):
        with pytest.raises(REFUSED):
            await publish_signal(js, SUBJECTS, forged)
    await runner.refused("amp.sig.aurora_gateway.platform_event")
    await runner.refused("amp.sig.im_polaris_qq.native_event")
    for subject in ("amp.evt.im_polaris_qq.message.received", "amp.run.agent.x", "amp.audit.x", "amp.dlq.x"):
        await runner.nc.publish(subject, b"{}")
        await runner.refused(subject)


async def test_the_runner_works_with_its_runs_queue_and_its_tasks(connect: Connect, runner: Session) -> None:
    js = runner.nc.jetstream(timeout=2)
    stores = await open_stores(js, SUBJECTS, RUNNER)  # the runner's own start-up: ensure, open, watch
    await ensure_runs_consumer(js, stores, RunnerConfig(), SUBJECTS)
    router = await connect("router")
    # A run is its run record (issue 38): the router creates it, the runner's durable is given it.
    run_subject = run_record_subject(run_records_bucket(SUBJECTS).name, "r-1")
    await router.nc.jetstream().publish(run_subject, b'{"run_id": "r-1"}', headers=CREATE_ONLY)
    pulled = await js.pull_subscribe_bind("runner", stream=stores.runs_stream)
    (run,) = await pulled.fetch(1, timeout=2)
    assert run.subject == run_subject
    await run.in_progress()
    await run.ack()
    await pulled.unsubscribe()
    # The records are not the runner's to write, nor to read but through its durable.
    await runner.nc.publish(run_subject, b'{"run_id": "r-1", "forged": true}')
    await runner.refused(run_subject)
    runner.errors.clear()
    with pytest.raises(REFUSED):
        await js.get_msg(stores.runs_stream, subject=run_subject)
    runner.errors.clear()

    revision = await stores.tasks.create("r-1", b'{"state": "running"}')
    await stores.tasks.update("r-1", b'{"state": "succeeded"}', last=revision)
    assert (await stores.tasks.get("r-1")).value == b'{"state": "succeeded"}'
    store = TaskStore(stores.tasks, js=js, bucket=tasks_bucket(SUBJECTS).name)
    assert await store.keys() == ["r-1"]  # listed without a consumer on the tasks bucket
    mirror: KvMirror[bytes] = KvMirror(stores.agents, bytes, name="agents")  # the catalog's watchers
    await mirror.start()
    await mirror.stop()
    info = await js.consumer_info(stores.runs_stream, "runner")
    assert info.num_ack_pending == 0 and info.num_pending == 0
    await runner.clean()


def _event(message_id: str, session_id: str) -> dict[str, object]:
    return {"header": {"method": "aurora/event", "message_id": message_id, "timestamp": now_iso(),
                       "source": {"app": "im.polaris.qq", "instance": "default"}},
            "payload": {"type": "message.received", "session_id": session_id, "data": {"text": message_id}}}


async def test_the_runner_reads_history_the_audit_and_large_events(connect: Connect, runner: Session) -> None:
    """event_history, the recovery's audit lookup and a large run event, as the runner does them."""
    bridge, gateway, router = await connect("event-bridge"), await connect("mcp-gateway"), await connect("router")
    earlier, current = _event("e-1", "s-1"), _event("e-2", "s-1")
    for doc, message_id in ((earlier, "e-1"), (current, "e-2")):
        await bridge.nc.jetstream().publish(SUBJECTS.event("im.polaris.qq", "message.received"),
                                            json.dumps(doc).encode(), headers={"Nats-Msg-Id": message_id})
    record = AuditRecord(call_id="call-1", at=now_iso(), tool="im.polaris.qq.send", system="im.polaris.qq",
                         caller="agent:a", status="ok")
    # Another service's record of a refused request, under the same call id, first: the recovery
    # takes a call's outcome from the gateway's records only.
    edge = await connect("mcp-edge")
    claimed = msgspec.structs.replace(record, status="denied", executed=True)
    await edge.nc.jetstream().publish(SUBJECTS.audit_refused("mcp-edge"), msgspec.json.encode(claimed))
    await gateway.nc.jetstream().publish(SUBJECTS.audit("im.polaris.qq"), msgspec.json.encode(record))
    objects = await ensure_object_store(router.nc.jetstream(), run_events_store(SUBJECTS))
    raw = json.dumps(current).encode()
    await objects.put("e-2", raw)

    js = runner.nc.jetstream(timeout=2)
    history = StreamHistory(js, SUBJECTS, window=3600, scan_limit=100)
    found = await history.earlier(msgspec.json.decode(json.dumps(current), type=EventEnvelope), limit=5, types=None)
    assert [e["message_id"] for e in found["events"]] == ["e-1"]
    audited = await JetStreamAudit(js, SUBJECTS).find("call-1", since=now_iso())
    assert audited is not None and audited.status == "ok"
    ref = ObjectRef(bucket=run_events_store(SUBJECTS).name, name="e-2", size=len(raw))
    run: RunPayload[EventEnvelope] = RunPayload(run_id="r-2", target=RunTarget(type="agent", id="a"),
                                                 binding_id="b", event_ref=ref)
    assert (await run_event(js, run, plan=RUNNER)).header.message_id == "e-2"
    await runner.clean()


async def test_the_runner_cannot_reshape_jetstream(connect: Connect, runner: Session) -> None:
    js = runner.nc.jetstream(timeout=0.5)
    # A stream of its own choosing could capture everyone's replies or republish anywhere.
    with pytest.raises(REFUSED):
        await js.add_stream(StreamConfig(name="SNOOP", subjects=["_INBOX.>"]))
    await runner.refused("$JS.API.STREAM.CREATE.SNOOP")
    runs = f"KV_{(await ensure_bucket(js, run_records_bucket(SUBJECTS))).bucket}"  # where the runs are kept
    for verb, call in (("DELETE", js.delete_stream(runs)), ("PURGE", js.purge_stream(runs)),
                       ("UPDATE", js.update_stream(StreamConfig(name=runs, subjects=["amp.run.>"])))):
        with pytest.raises(REFUSED):
            await call
        await runner.refused(f"$JS.API.STREAM.{verb}.{runs}")
    # The router's cursor on the events stream is not the runner's to change.
    with pytest.raises(REFUSED):
        await js.add_consumer("AMP_EVENTS", ConsumerConfig(durable_name="router", filter_subject="amp.evt.none"))
    await runner.refused("$JS.API.CONSUMER.DURABLE.CREATE.AMP_EVENTS.router")
    ojs = (await connect("operator")).nc.jetstream()
    assert "SNOOP" not in {info.config.name for info in await ojs.streams_info()}
    assert (await ojs.stream_info(runs)).config.subjects == ["$KV.AMP_RUN_RECORDS.>"]


async def test_no_consumer_can_carry_the_bytes_the_runner_writes_to_its_tasks(
        connect: Connect, runner: Session) -> None:
    """nats-server does not check a push consumer's deliver subject (nats-io/nats-server#8274):
    a consumer on the tasks bucket would hand anything the runner wrote there to any subscriber,
    here an app's stdin. So the runner gets no consumer on that bucket, at the price of listing
    its tasks with a watcher (`read_all`)."""
    supervisor = await connect("app-supervisor")
    c2s = SUBJECTS.mcp("im.polaris.qq", "default", "c2s")
    relayed = await supervisor.nc.subscribe(c2s)
    await write_through.flush(supervisor.nc)
    js = runner.nc.jetstream(timeout=0.5)
    tasks = await ensure_bucket(js, tasks_bucket(SUBJECTS))
    await tasks.put("t-1", b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "rm"}}')
    with pytest.raises(REFUSED):
        await js.add_consumer("KV_AMP_TASKS", ConsumerConfig(deliver_subject=c2s))
    await runner.refused("$JS.API.CONSUMER.CREATE.KV_AMP_TASKS")
    with pytest.raises(NatsTimeoutError):
        await relayed.next_msg(timeout=0.3)
    runner.errors.clear()
    with pytest.raises(REFUSED):
        await read_all(tasks)


async def test_the_runner_cannot_replay_stored_documents_into_an_admin_endpoint(
        connect: Connect, runner: Session) -> None:
    """nats-server 2.15 lets a push consumer deliver to any subject (nats-io/nats-server#8274),
    so the runner can point one at an admin endpoint: the endpoint must ignore stream
    deliveries (their reply subject is an ack subject), never take them for requests."""
    gateway = await connect("mcp-gateway")  # the agents' admin area is the gateway's
    deleted: list[dict[str, object]] = []

    async def delete(body: dict[str, object]) -> dict[str, object]:
        deleted.append(body)
        return {"deleted": True}

    service = await start_admin_service(gateway.nc, SUBJECTS, name="aurora-agents", version="0.1.0",
                                        areas={"agents": {"delete": delete}})
    try:
        agents = await ensure_bucket(gateway.nc.jetstream(), agents_bucket(SUBJECTS))
        await agents.put("welcome", b'{"kind": "Agent", "id": "welcome"}')
        js = runner.nc.jetstream(timeout=1)
        # Named like its own watchers, so the create is one the runner may send.
        await js.add_consumer("KV_AMP_AGENTS", ConsumerConfig(
            name=ephemeral_name("runner"), deliver_subject=SUBJECTS.admin("agents", "delete"), deliver_group="q",
            ack_policy=AckPolicy.NONE))

        async def handled() -> bool:  # the endpoint got the stored document and its handler returned
            # The plain endpoint (each is also served at `….u.*` for people, which this one is not).
            [endpoint] = [e for e in service.stats().endpoints if not e.name.endswith("-person")]
            return endpoint.num_requests >= 1 and endpoint.processing_time > 0

        await poll(handled, what="the stream delivery to reach the admin endpoint")
        if deleted:
            pytest.fail(f"the runner had the gateway delete {deleted}")
    finally:
        await service.stop()
