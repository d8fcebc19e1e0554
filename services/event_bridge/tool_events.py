"""`tool.*` events from the audit stream: the record of every call that reached its app or
system becomes the call's event.

The gateway reports a call once, with its audit record; the `tool.*` event is made here from
that record rather than from a second message the gateway would publish, store and wait for
(one JetStream message per call on the gateway's path instead of two; docs/design.md, "One
report per call"). Records of calls that were refused before anything ran, and of approval
decisions, are not events; records written before this (no `executed` field) are not either,
so a durable reading the stream from its start makes no event twice.

The event's id is derived from the call id and the record's time: a redelivered record becomes
the same event again, which JetStream drops as a duplicate.
"""

from __future__ import annotations

import uuid

import msgspec
from nats.aio.msg import Msg

from services.event_bridge.mapping import Rejected, map_signal
from shared.contracts.audit import AuditRecord
from shared.contracts.envelope import EventEnvelope
from shared.contracts.signals import ToolOutcome, ToolResultSignal
from shared.ids import uuid5_text

TOOL_EVENTS_DURABLE = "event-bridge-tools"
_EVENT_ID_NAMESPACE = uuid.UUID("0b7e3f52-52a4-4c0e-8a43-6b1f6d3c9e10")
_decoder = msgspec.json.Decoder(AuditRecord)


def outcome_of(record: AuditRecord) -> ToolOutcome:
    if record.status == "ok":
        return "succeeded"
    return "timeout" if record.error_code == "timeout" else "failed"


def tool_signal(record: AuditRecord) -> ToolResultSignal | None:
    """What the record says happened, as the signal the bridge maps; None when nothing ran."""
    if not record.executed or record.system is None:
        return None
    error = {"code": record.error_code, "message": record.error_message or ""} if record.error_code else None
    return ToolResultSignal(
        signal_id=uuid5_text(_EVENT_ID_NAMESPACE, f"{record.call_id}|{record.at}"),
        app=record.system, instance=record.instance or "default", observed_at=record.at, trace=record.trace,
        tool=record.tool, outcome=outcome_of(record), status=record.status, duration_ms=record.duration_ms,
        call_id=record.call_id, run_id=record.run_id, task_id=record.task_id, agent=record.agent,
        session_id=record.session_id, synthetic=record.synthetic, error=error,
    )


def tool_event(msg: Msg) -> EventEnvelope | Rejected | None:
    """The event of one audit message, the reason it cannot be one, or None: not an event."""
    try:
        record = _decoder.decode(msg.data)
    except (msgspec.DecodeError, RecursionError) as exc:
        return Rejected(f"malformed audit record: {exc}")
    signal = tool_signal(record)
    if signal is None:
        return None
    parts = msg.subject.split(".")
    if len(parts) != 3:
        return Rejected(f"audit subject {msg.subject!r} is not <prefix>.audit.<app>")
    return map_signal(signal, subject_app_token=parts[2])
