"""A dispatched app event's route trace is kept in its run record, not in KV_AMP_ROUTES; `trace`
answers it from the record with the content the stored trace had; events that made no run, and a
platform event some binding took, keep their stored trace; `replay` calls the event already
dispatched. The router runs in-process against a real nats-server."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest
from nats.aio.client import Client as NATS

from services.router.catalog import decode_agent
from services.router.events import decode_event, encode_document
from services.router.selection import RouteTable, StaticProcessors, decide
from services.router.traces import encode_trace, read_trace
from shared.contracts.agent import Agent
from shared.contracts.binding import Binding
from shared.contracts.resource import canonical_json, parse_resource
from shared.contracts.route import RouteTrace
from shared.contracts.run import RunRecord, RunTarget, run_id_for
from shared.contracts.subjects import Subjects
from shared.jetstream.run_records import decode_record, record_subject, run_record_key
from shared.nats.admin_service import AdminRequestError, admin_request
from tests.integration.router.helpers import (
    apply,
    consumer_done,
    poll,
    publish_events,
    router_current,
    run_count,
    running_router,
    stream_count,
)
from tests.unit.router.factories import event_doc

AGENT = {"id": "chat", "agent_kind": "llm", "events": ["*"]}
BINDINGS = [  # the VIP binding ranks first and fails its filter: the trace names it, then the chosen one
    {"id": "vip", "event_pattern": "message.received", "priority": 5, "target_type": "agent", "target_id": "chat",
     "filters": [{"field": "data.vip", "op": "eq", "value": True}]},
    {"id": "chat", "event_pattern": "message.*", "target_type": "agent", "target_id": "chat"},
    {"id": "tasks", "event_pattern": "task.succeeded", "target_type": "agent", "target_id": "chat"},
]


async def trace(nc: NATS, subjects: Subjects, message_id: str) -> dict[str, Any]:
    result: dict[str, Any] = await admin_request(nc, subjects, "router", "trace", {"message_id": message_id},
                                                 timeout=15)
    return result


def trace_as_stored_before(doc: dict[str, Any]) -> dict[str, Any]:
    """The trace the router stored in KV_AMP_ROUTES for this event before (router.py's RouteTrace),
    from the same routing decision, with every field but `at` (the routing's time)."""
    event = decode_event(encode_document(doc))
    table = RouteTable([parse_resource(Binding, b) for b in BINDINGS])
    processors = StaticProcessors(agents={"chat": decode_agent(canonical_json(parse_resource(Agent, AGENT)))},
                                  pipelines={})
    decision = decide(event, table, processors, now=datetime.now(UTC))
    assert decision.status == "dispatched" and decision.binding_id is not None
    stored = RouteTrace(
        message_id=event.header.message_id, status=decision.status, binding_id=decision.binding_id,
        target=decision.target, run_id=run_id_for(event.header.message_id, decision.binding_id),
        steps=decision.steps, candidates=decision.candidates, reason=decision.reason,
        event_type=event.payload.type, source_app=event.header.source.app, synthetic=event.payload.synthetic,
        at="", router="test", event_seq=None)
    as_json: dict[str, Any] = msgspec.json.decode(msgspec.json.encode(stored))  # as an answer comes
    del as_json["at"]
    return as_json


async def test_a_dispatched_app_event_keeps_its_trace_in_its_run_record(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    routed = event_doc("message.received", data={"vip": False}, synthetic=True)
    unrouted = event_doc("friend.request_received")  # an app's event no binding takes: its trace is stored
    platform = event_doc("task.succeeded", app="aurora.runner", message_id="task-t7-2", data={"task_id": "t7"})
    async with running_router(nc, subjects):
        await apply(nc, subjects, "agents", AGENT)
        for binding in BINDINGS:
            await apply(nc, subjects, "bindings", binding)
        await router_current(nc, subjects)
        await publish_events(js, subjects, [routed, unrouted, platform])
        # Acked only once what each stores is stored.
        await poll(lambda: consumer_done(js, subjects), what="the three events routed and acked")

        routes = await js.key_value(subjects.stream("ROUTES"))
        message_id = routed["header"]["message_id"]
        assert await read_trace(routes, message_id) is None, "a dispatched app event stores no trace of its own"
        assert await stream_count(js, f"KV_{subjects.stream('ROUTES')}") == 2
        stored = await read_trace(routes, unrouted["header"]["message_id"])
        assert stored is not None and stored.status == "route_not_found"
        kept = await read_trace(routes, "task-t7-2")  # a platform event some binding took: stored, as ever
        assert kept is not None and (kept.status, kept.binding_id) == ("dispatched", "tasks")

        found = await trace(nc, subjects, message_id)
        at = found.pop("at")
        assert found == trace_as_stored_before(routed)
        assert datetime.fromisoformat(at).tzinfo is not None
        assert [step["binding_id"] for step in found["steps"]] == ["vip", "chat"], found

        # The record is still what the gateway's custody decodes, with nothing more.
        entry = await (await js.key_value(subjects.stream("RUN_RECORDS"))).get(run_record_key(found["run_id"]))
        assert entry.value is not None and b'"route":' in entry.value
        record = decode_record(entry.value)
        assert not hasattr(record, "route") and type(record) is RunRecord
        assert (record.binding_id, record.event_message_id, record.synthetic) == ("chat", message_id, True)

        # A replay by id calls it already dispatched; by time it passes over it.
        replayed = await admin_request(nc, subjects, "router", "replay", {"message_ids": [message_id]})
        assert replayed["results"] == [{"message_id": message_id, "outcome": "already_dispatched",
                                        "binding_id": "chat", "target": {"type": "agent", "id": "chat"},
                                        "run_id": found["run_id"]}]
        since = await admin_request(nc, subjects, "router", "replay", {"since": "2000-01-01T00:00:00Z"}, timeout=15)
        assert message_id not in [r["message_id"] for r in since["results"]], since
        assert await run_count(js, subjects) == 2, "no run dispatched again"


async def test_the_record_of_an_event_whose_binding_is_gone_is_found_by_reading_the_records(
        nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    routed = event_doc("message.received", data={"vip": True})
    async with running_router(nc, subjects):
        await apply(nc, subjects, "agents", AGENT)
        for binding in BINDINGS:
            await apply(nc, subjects, "bindings", binding)
        await router_current(nc, subjects)
        await publish_events(js, subjects, [routed])
        await poll(lambda: consumer_done(js, subjects), what="the event routed and acked")
        message_id = routed["header"]["message_id"]
        assert (await trace(nc, subjects, message_id))["binding_id"] == "vip"
        # More records since than one round of windows reads (16 × 500), then the binding goes.
        records = subjects.stream("RUN_RECORDS")
        pending = []
        for n in range(8_600):
            other = RunRecord(run_id=f"filler-{n}", target=RunTarget(type="agent", id="chat"), binding_id="chat",
                              event_message_id=str(uuid.uuid4()), source_app="im.polaris.qq",
                              event_at="2026-06-19T12:00:00+08:00")
            pending.append(await js.publish_async(record_subject(records, other.run_id), msgspec.json.encode(other)))
        for ack in pending:
            await ack
        assert (await admin_request(nc, subjects, "bindings", "delete", {"id": "vip"}))["result"] == "deleted"

        found = await trace(nc, subjects, message_id)
        assert (found["status"], found["binding_id"], found["run_id"]) == (
            "dispatched", "vip", run_id_for(message_id, "vip"))
        assert found["steps"] == [{"binding_id": "vip", "passed": True, "reason": found["steps"][0]["reason"]}]
        # Replay by id reads the records exactly only: its binding gone, it is not found (nothing dispatched).
        replayed = await admin_request(nc, subjects, "router", "replay", {"message_ids": [message_id]}, timeout=15)
        assert replayed["results"][0]["outcome"] == "not_found"

        with pytest.raises(AdminRequestError, match="nor among the newest 20,000 run records"):
            await trace(nc, subjects, "no-such-event")


async def test_a_record_written_before_keeps_decoding_and_its_trace_stays_in_kv(nc: NATS, subjects: Subjects) -> None:
    """A record without `route` (written before this change, or by a replay) decodes as ever; its
    event's trace is the one in KV_AMP_ROUTES, which `trace` reads first."""
    js = nc.jetstream()
    async with running_router(nc, subjects) as service:
        old = RunRecord(run_id="run-old-1", target=RunTarget(type="agent", id="chat"), binding_id="chat",
                        event_message_id="evt-old-1", source_app="im.polaris.qq", event_at="2026-06-19T12:00:00Z")
        await js.publish(record_subject(subjects.stream("RUN_RECORDS"), old.run_id), msgspec.json.encode(old))
        before = RouteTrace(message_id="evt-old-1", status="dispatched", binding_id="chat",
                            target=old.target, run_id=old.run_id, at="2026-06-19T12:00:01.000+00:00", router="r0")
        await service.parts.stores.routes.put("evt-old-1", encode_trace(before))
        assert await trace(nc, subjects, "evt-old-1") == msgspec.json.decode(encode_trace(before))
        assert decode_record((await service.parts.stores.run_records.get("run-old-1")).value or b"") == old



async def test_a_replayable_trace_older_than_the_events_run_gives_way_to_its_record(
        nc: NATS, subjects: Subjects) -> None:
    """A delivery stored `route_not_found` and was not acked; the event came again once a binding
    took it, and its trace went into its run record. `trace` answers from the record, and a replay
    (by id, by time) calls the event already dispatched instead of dispatching it again."""
    js = nc.jetstream()
    doc = event_doc("message.received", data={"vip": False})
    message_id = doc["header"]["message_id"]
    async with running_router(nc, subjects) as service:
        await apply(nc, subjects, "agents", AGENT)
        for binding in BINDINGS:
            await apply(nc, subjects, "bindings", binding)
        await router_current(nc, subjects)
        await publish_events(js, subjects, [doc])
        await poll(lambda: consumer_done(js, subjects), what="the event routed and acked")
        seq = (await js.stream_info(subjects.stream("EVENTS"))).state.last_seq
        earlier = RouteTrace(message_id=message_id, status="route_not_found", at="2026-12-05T00:00:00.000+00:00",
                             router="r0", event_seq=seq, reason="no enabled binding takes 'message.received'")
        await service.parts.stores.routes.put(message_id, encode_trace(earlier))

        found = await trace(nc, subjects, message_id)
        assert (found["status"], found["binding_id"]) == ("dispatched", "chat"), found
        run_id = run_id_for(message_id, "chat")
        already = {"message_id": message_id, "outcome": "already_dispatched", "binding_id": "chat",
                   "target": {"type": "agent", "id": "chat"}, "run_id": run_id}
        by_id = await admin_request(nc, subjects, "router", "replay", {"message_ids": [message_id]})
        assert by_id["results"] == [already]
        since = await admin_request(nc, subjects, "router", "replay", {"since": "2000-01-01T00:00:00Z"}, timeout=15)
        assert since["results"] == [already]
        assert await run_count(js, subjects) == 1, "no run dispatched again"
