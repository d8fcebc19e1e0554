"""Turning a routing decision into a run on the wire (pure: bytes in, bytes out).

The event is inlined as the exact bytes that arrived (already validated), so a run never
re-encodes its event; above `inline_limit` it is referenced in the Object Store instead.
Every run comes with its run record (`RunRecord`), which the router writes before the run; a
routed app event's trace rides in that record (`route`, services/router/recorded_traces.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from services.router.recorded_traces import RouteNote, TracedRunRecord
from shared.contracts.envelope import Envelope, EventEnvelope, Header, Source, Trace
from shared.contracts.run import (
    DeliveryContext,
    ObjectRef,
    ReplyTarget,
    RunPayload,
    RunTarget,
    method_for,
    run_id_for,
)
from shared.jetstream.run_records import encode_record

ROUTER_APP = "aurora.router"
_encoder = msgspec.json.Encoder()
_RawRunPayload = RunPayload[msgspec.Raw]  # subscripting a generic per call is not free


@dataclass(frozen=True, slots=True)
class RunMessage:
    """A run ready to publish; when `offload` is set, those bytes go to the Object Store first.
    `record` is its encoded run record, stored before the run is published."""

    run_id: str
    subject: str
    data: bytes
    offload: ObjectRef | None
    record: bytes


def reply_target(event: EventEnvelope) -> ReplyTarget | None:
    """The reply target frozen from the event: only where the event names a session, a
    conversation or a subject (a friend request …). An event with none of them gets none —
    nobody guesses where to answer. A target without a conversation is no place to reply in:
    `event_reply` needs a session or conversation, `event_respond_friend_request` a
    `friend_request` subject, `event_get_actor` an actor."""
    p = event.payload
    if p.session_id is None and p.conversation is None and p.subject is None:
        return None
    actor_id = p.actor.id if p.actor is not None else None
    source = event.header.source
    return ReplyTarget(
        app=source.app, instance=source.instance, bot=p.bot, workspace=p.workspace,
        session_id=p.session_id, conversation=p.conversation,
        message_id=p.subject.id if p.subject is not None and p.subject.kind == "message" else None,
        subject_kind=p.subject.kind if p.subject is not None else None,
        subject_id=p.subject.id if p.subject is not None else None,
        actor_id=actor_id,
    )


def build_run(event: EventEnvelope, raw: bytes, *, binding_id: str, target: RunTarget, subject: str,
              timestamp: str, router_instance: str, inline_limit: int, store_bucket: str,
              capabilities: tuple[str, ...] = (), trace: Trace | None = None,
              route: RouteNote | None = None) -> RunMessage:
    """The run for `target`, carrying `trace` (the router's span, when tracing is on) or else
    the event's own trace; its record carries `route`, the event's route trace, when given."""
    header = event.header
    run_id = run_id_for(header.message_id, binding_id)
    offload = None
    inline: msgspec.Raw | None = msgspec.Raw(raw)
    if len(raw) > inline_limit:
        offload = ObjectRef(bucket=store_bucket, name=header.message_id, size=len(raw))
        inline = None
    target_frozen = reply_target(event)
    synthetic = event.payload.synthetic
    run = Envelope(
        header=Header(
            method=method_for(target.type), message_id=run_id, timestamp=timestamp,
            source=Source(app=ROUTER_APP, instance=router_instance),
            trace=trace or header.trace,
        ),
        payload=_RawRunPayload(
            run_id=run_id, target=target, binding_id=binding_id, event=inline, event_ref=offload,
            delivery=DeliveryContext(reply_target=target_frozen, capabilities=capabilities),
            synthetic=synthetic,
        ),
    )
    record = TracedRunRecord(
        run_id=run_id, target=target, binding_id=binding_id, event_message_id=header.message_id,
        source_app=header.source.app, source_instance=header.source.instance,
        session_id=event.payload.session_id, reply_target=target_frozen, actor=event.payload.actor,
        capabilities=capabilities, synthetic=synthetic, event_at=header.timestamp, route=route,
    )
    return RunMessage(run_id=run_id, subject=subject, data=_encoder.encode(run), offload=offload,
                      record=encode_record(record))
