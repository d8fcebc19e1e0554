"""Turning a routing decision into a run on the wire (pure: bytes in, bytes out).

The event is inlined as the exact bytes that arrived (already validated), so a run never
re-encodes its event; above `inline_limit` it is referenced in the Object Store instead.
The run is its run record (`RunRecord`'s fields and the run's: the one message a routed event
stores, issue 38); a routed app event's trace rides in it too (`route`,
services/router/recorded_traces.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

from services.router.recorded_traces import NO_EVENT, RouteNote, TracedRunRecord
from shared.contracts.envelope import EventEnvelope, Header, Source, Trace
from shared.contracts.run import ObjectRef, ReplyTarget, RunTarget, method_for, run_id_for
from shared.jetstream.run_records import encode_record

ROUTER_APP = "aurora.router"


@dataclass(frozen=True, slots=True)
class RunMessage:
    """A run ready to store: `record` is its run record, which holds the run; when `offload` is
    set, the event's bytes go to the Object Store first."""

    run_id: str
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


def build_run(event: EventEnvelope, raw: bytes, *, binding_id: str, target: RunTarget,
              timestamp: str, router_instance: str, inline_limit: int, store_bucket: str,
              capabilities: tuple[str, ...] = (), trace: Trace | None = None,
              route: RouteNote | None = None) -> RunMessage:
    """The run for `target`, carrying `trace` (the router's span, when tracing is on) or else
    the event's own trace; its record carries `route`, the event's route trace, when given."""
    header = event.header
    run_id = run_id_for(header.message_id, binding_id)
    offload = None
    inline = msgspec.Raw(raw)
    if len(raw) > inline_limit:
        offload = ObjectRef(bucket=store_bucket, name=header.message_id, size=len(raw))
        inline = NO_EVENT
    run_header = Header(method=method_for(target.type), message_id=run_id, timestamp=timestamp,
                        source=Source(app=ROUTER_APP, instance=router_instance), trace=trace or header.trace)
    record = TracedRunRecord(
        run_id=run_id, target=target, binding_id=binding_id, event_message_id=header.message_id,
        source_app=header.source.app, source_instance=header.source.instance,
        session_id=event.payload.session_id, reply_target=reply_target(event), actor=event.payload.actor,
        capabilities=capabilities, synthetic=event.payload.synthetic, event_at=header.timestamp,
        header=run_header, event=inline, event_ref=offload, route=route,
    )
    return RunMessage(run_id=run_id, offload=offload, record=encode_record(record))
