"""`tool.*` events from the audit stream, with the bridge in-process against a real nats-server:
an executed call's record becomes one event (also when the record is delivered again, and
whichever service started first), a refused call's record or an old-format record none, and an
unreadable record is dead-lettered with its reason."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import msgspec
import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from services.event_bridge.bridge import EventBridge
from services.event_bridge.tool_events import TOOL_EVENTS_DURABLE
from shared.clock import now_iso
from shared.contracts.audit import AuditRecord
from shared.contracts.envelope import Trace
from shared.contracts.subjects import Subjects
from shared.jetstream.deadletter import REASON
from shared.jetstream.streams import audit_stream, dlq_stream, ensure_streams, events_stream, fabric_streams
from tests.harness.waiting import consumed, last_seq
from tests.integration.event_bridge.helpers import running_bridge

APP = "im.polaris.weather"
TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def record(call_id: str, **fields: object) -> AuditRecord:
    base: dict[str, object] = {
        "call_id": call_id, "at": now_iso(), "tool": f"{APP}.get_weather", "system": APP, "caller": "agent:weather",
        "agent": "weather", "run_id": "run-1", "task_id": "run-1", "session_id": "s-1", "status": "ok",
        "duration_ms": 12.5, "executed": True, "instance": "default",
    }
    return AuditRecord(**{**base, **fields})  # type: ignore[arg-type]


async def audit(js: JetStreamContext, subjects: Subjects, entry: AuditRecord | bytes, app: str = APP) -> int:
    data = entry if isinstance(entry, bytes) else msgspec.json.encode(entry)
    return (await js.publish(subjects.audit(app), data)).seq


async def tool_events(js: JetStreamContext, subjects: Subjects) -> list[dict[str, object]]:
    """Every `tool.*` event stored, oldest first."""
    stream = events_stream(subjects).name
    info = await js.stream_info(stream)
    found: list[dict[str, object]] = []
    if not info.state.messages:
        return found
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        msg = await js.get_msg(stream, seq)
        if msg.subject and ".tool." in msg.subject:
            found.append(json.loads(msg.data or b"{}"))
    return found


@pytest.fixture
async def bridge(nc: NATS, subjects: Subjects) -> AsyncIterator[EventBridge]:
    async with running_bridge(nc, subjects) as running:
        yield running


async def all_processed(js: JetStreamContext, subjects: Subjects) -> None:
    stream = audit_stream(subjects).name
    await consumed(js, stream, TOOL_EVENTS_DURABLE, through=await last_seq(js, stream, subjects.audit_all),
                   what="the bridge's audit consumer")


async def test_an_executed_calls_record_becomes_its_tool_event_and_nothing_else_does(
        nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    # The gateway may audit before any bridge has started: nothing is missed.
    await ensure_streams(js, [*fabric_streams(subjects), audit_stream(subjects)])
    failed = record("call-failed", status="tool_error", error_code="tool_error", error_message="no such city",
                    trace=Trace(traceparent=TRACEPARENT))
    await audit(js, subjects, failed)
    async with running_bridge(nc, subjects):
        await audit(js, subjects, record("call-refused", status="denied", error_code="not_bound", executed=False))
        await audit(js, subjects, record("call-timeout", status="timeout", error_code="timeout"))
        old = {k: v for k, v in msgspec.to_builtins(record("call-old")).items()
               if k not in ("executed", "instance", "trace")}
        await audit(js, subjects, json.dumps(old).encode())  # written before tool events came from the audit
        decision = record("approval-1-decision", system=None, status="approval_granted", executed=False)
        await audit(js, subjects, decision, app="aurora.gateway")
        # A service's record of a request it refused (`<prefix>.audit.refused.<service>`) is never a
        # call's, whatever it says: not `<prefix>.audit.<app>`, it is no event (but a dead letter).
        forged = msgspec.json.encode(record("call-claimed-by-a-runner"))
        await js.publish(subjects.audit_refused("runner"), forged)
        await audit(js, subjects, record("call-ok"))
        await all_processed(js, subjects)
    events = await tool_events(js, subjects)
    assert [(e["payload"]["type"], e["payload"]["data"]["call_id"]) for e in events] == [  # type: ignore[index]
        ("tool.failed", "call-failed"), ("tool.timeout", "call-timeout"), ("tool.succeeded", "call-ok")]
    first = events[0]
    assert first["header"]["source"] == {"app": APP, "instance": "default"}  # type: ignore[index]
    assert first["header"]["timestamp"] == failed.at  # type: ignore[index]
    assert first["payload"]["data"]["error"] == {"code": "tool_error", "message": "no such city"}  # type: ignore[index]
    assert first["payload"]["data"]["run_id"] == "run-1" and first["payload"]["session_id"] == "s-1"  # type: ignore[index]
    # The event continues the gateway's span for the call (tracing is off here: its trace as it is).
    assert first["header"]["trace"]["traceparent"] == TRACEPARENT  # type: ignore[index]


async def test_a_record_delivered_again_is_the_same_event_once(
        nc: NATS, subjects: Subjects, bridge: EventBridge) -> None:
    js = nc.jetstream()
    again = record("call-twice")
    await audit(js, subjects, again)
    # The same record stored twice (as after a lost ack, outside the audit's own de-duplication).
    await audit(js, subjects, again)
    await all_processed(js, subjects)
    events = await tool_events(js, subjects)
    assert [e["payload"]["data"]["call_id"] for e in events] == ["call-twice"]  # type: ignore[index]


async def test_an_unreadable_audit_record_is_dead_lettered_with_its_reason(
        nc: NATS, subjects: Subjects, bridge: EventBridge) -> None:
    js = nc.jetstream()
    await audit(js, subjects, b"{not json")
    await all_processed(js, subjects)
    dlq = dlq_stream(subjects).name
    msg = await js.get_last_msg(dlq, f"{subjects.prefix}.dlq.event_bridge")
    assert msg.data == b"{not json"
    assert msg.headers is not None and "malformed audit record" in msg.headers.get(REASON, ""), msg.headers
    assert await tool_events(js, subjects) == []
