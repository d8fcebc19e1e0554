# Over 300 lines: every signal kind's mapping to an event, pure, read side by side.
"""Pure mapping of one raw signal to one AMP event, or to the reason it is rejected.

The bridge only converts: it makes no reply decision and invents nothing. Platform signals
become platform event types (`app.*`, `tool.*` …); a third-party notification is kept verbatim
under `notification.<method>`; a native `aurora/event` is completed and checked.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import msgspec

from shared.clock import is_past
from shared.contracts.envelope import (
    METHOD_EVENT,
    PROTOCOL,
    Actor,
    EventEnvelope,
    EventPayload,
    EventSubject,
    Header,
    Source,
    Trace,
)
from shared.contracts.signals import (
    PLATFORM_APP_PREFIX,
    LifecycleSignal,
    ListChangedSignal,
    NativeEventSignal,
    NotificationSignal,
    PlatformEventSignal,
    ResourceReadSignal,
    Signal,
    SignalBase,
    ToolResultSignal,
    platform_type_problem,
)
from shared.contracts.subjects import app_token
from shared.contracts.validation import (
    APP_ID_PATTERN,
    MESSAGE_ID_PATTERN,
    NativeEvent,
    check_timestamp,
    event_type_pattern,
    is_reserved_type,
    validate_native_event,
)
from shared.errors import EnvelopeError, SubjectError
from shared.ids import uuid5_text
from shared.observability.trace_context import root_trace

# Native events without a message_id get one derived from the signal id, so that a signal
# delivered twice always yields the same event id (and JetStream drops the copy).
_NATIVE_ID_NAMESPACE = uuid.UUID("6f1f3c1e-2b0e-4d55-9b53-a0a5d6c1a001")
_UNSAFE = re.compile(r"[^a-z0-9_]+")
_APP_ID = re.compile(APP_ID_PATTERN)
_MESSAGE_ID = re.compile(MESSAGE_ID_PATTERN)
_EVENT_TYPE = event_type_pattern()
_MAX_TYPE_LENGTH = 128


@dataclass(frozen=True)
class Rejected:
    """Why a signal cannot become an event; the bridge dead-letters it with this reason."""

    reason: str


def map_signal(
    signal: Signal, *, subject_app_token: str, now: datetime | None = None
) -> EventEnvelope | Rejected:
    """Turn `signal`, received on a subject naming `subject_app_token`, into an event."""
    problem = _header_problem(signal)
    if problem is not None:
        return Rejected(f"invalid signal: {problem}")
    try:
        if app_token(signal.app) != subject_app_token:
            return Rejected(
                f"impersonation: signal for app {signal.app!r} arrived on the subject of "
                f"{subject_app_token!r}"
            )
    except SubjectError as exc:
        return Rejected(str(exc))
    if isinstance(signal, NativeEventSignal):
        return _native(signal, now)
    problem = _payload_problem(signal)
    if problem is not None:
        return Rejected(f"invalid signal: {problem}")
    return _platform_event(signal, _payload_of(signal))


def _header_problem(signal: SignalBase) -> str | None:
    """The signal's fields that become the event's header must already be valid there: the
    platform's events are built without the edge models, so they are checked here, cheaply."""
    if not _MESSAGE_ID.fullmatch(signal.signal_id):
        return f"signal_id {signal.signal_id[:140]!r} is not a valid message id"
    if not _APP_ID.fullmatch(signal.app):
        return f"app {signal.app[:140]!r} is not a valid app id"
    if not 1 <= len(signal.instance) <= 64:
        return f"instance {signal.instance[:80]!r} must have 1 to 64 characters"
    try:
        check_timestamp(signal.observed_at)
    except ValueError as exc:
        return f"observed_at {signal.observed_at[:60]!r}: {exc}"
    return None


def _payload_problem(signal: SignalBase) -> str | None:
    if isinstance(signal, PlatformEventSignal):
        if signal.app.startswith(PLATFORM_APP_PREFIX) and not is_reserved_type(signal.type):
            return f"{signal.type!r} is not a platform event type"
        problem = platform_type_problem(signal.app, signal.type)
        if problem is not None:
            return problem
    if isinstance(signal, ToolResultSignal) and not signal.tool:
        return "tool must not be empty"
    if isinstance(signal, ResourceReadSignal) and not signal.uri:
        return "uri must not be empty"
    event_type = event_type_of(signal)
    if len(event_type) > _MAX_TYPE_LENGTH or not _EVENT_TYPE.fullmatch(event_type):
        # Name the field the type is made of, so the publisher knows what to fix.
        field = "method" if isinstance(signal, NotificationSignal) else "type"
        return (f"{field}: it would become the invalid event type {event_type[:140]!r} "
                f"(lowercase dotted words, at most {_MAX_TYPE_LENGTH} characters)")
    return None


def event_type_of(signal: SignalBase) -> str:
    """The stable event type a platform signal becomes (not used for native events)."""
    if isinstance(signal, LifecycleSignal):
        return f"app.{signal.state}"
    if isinstance(signal, ListChangedSignal):
        return f"{signal.list}.list_changed"
    if isinstance(signal, ToolResultSignal):
        return f"tool.{signal.outcome}"
    if isinstance(signal, ResourceReadSignal):
        return "resource.read"
    if isinstance(signal, NotificationSignal):
        return notification_type(signal.method)
    if isinstance(signal, PlatformEventSignal):
        return signal.type
    raise TypeError(f"no platform event type for {type(signal).__name__}")


def notification_type(method: str) -> str:
    """`notifications/acme/ping` → `notification.acme.ping`, each part made token-safe."""
    parts = [p for p in method.split("/") if p]
    if parts and parts[0] == "notifications":
        parts = parts[1:]
    tokens = [_UNSAFE.sub("_", p.lower()).strip("_") for p in parts]
    tokens = [t for t in tokens if t] or ["unknown"]
    return "notification." + ".".join(tokens)


def _payload_of(signal: Signal) -> EventPayload:
    event_type = event_type_of(signal)
    if isinstance(signal, LifecycleSignal):
        data: dict[str, Any] = {"state": signal.state, "reason": signal.reason}
        if signal.exit_code is not None:
            data["exit_code"] = signal.exit_code
        if signal.detail:
            data["detail"] = signal.detail
        return EventPayload(
            type=event_type,
            summary=f"app {signal.app} {signal.state.replace('_', ' ')}"
            + (f": {signal.reason}" if signal.reason else ""),
            data=data,
            subject=EventSubject(kind="app", id=f"{signal.app}/{signal.instance}"),
        )
    if isinstance(signal, ListChangedSignal):
        return EventPayload(
            type=event_type,
            summary=f"app {signal.app} changed its {signal.list} list",
            data={"list": signal.list},
            subject=EventSubject(kind="app", id=f"{signal.app}/{signal.instance}"),
        )
    if isinstance(signal, ToolResultSignal):
        return EventPayload(
            type=event_type,
            session_id=signal.session_id,
            summary=f"tool {signal.tool} {signal.outcome} ({signal.status})",
            data={
                "tool": signal.tool,
                "status": signal.status,
                "duration_ms": signal.duration_ms,
                "call_id": signal.call_id,
                "run_id": signal.run_id,
                "task_id": signal.task_id,
                "agent": signal.agent,
                "error": signal.error,
            },
            subject=EventSubject(kind="tool", id=signal.tool),
            synthetic=signal.synthetic,
        )
    if isinstance(signal, ResourceReadSignal):
        return EventPayload(
            type=event_type,
            summary=f"resource {signal.uri} read",
            data={"uri": signal.uri, "mime_type": signal.mime_type, "size": signal.size,
                  "text": signal.text},
            subject=EventSubject(kind="resource", id=signal.uri),
        )
    if isinstance(signal, PlatformEventSignal):
        subject = (
            EventSubject(kind=signal.subject_kind, id=signal.subject_id)
            if signal.subject_kind and signal.subject_id
            else None
        )
        return EventPayload(type=event_type, summary=signal.summary, session_id=signal.session_id,
                            data=signal.data, subject=subject, synthetic=signal.synthetic, actor=signal.actor)
    assert isinstance(signal, NotificationSignal)
    # Conservative: the method and params are kept verbatim; nothing is inferred from them.
    return EventPayload(
        type=event_type,
        data={"method": signal.method, "params": signal.params},
        source_event_type=signal.method,
    )


def _platform_event(signal: SignalBase, payload: EventPayload) -> EventEnvelope:
    return EventEnvelope(
        header=Header(
            protocol=PROTOCOL,
            method=METHOD_EVENT,
            message_id=signal.signal_id,
            timestamp=signal.observed_at,
            source=Source(app=signal.app, instance=signal.instance),
            trace=signal.trace,
        ),
        payload=payload,
    )


def _native(signal: NativeEventSignal, now: datetime | None) -> EventEnvelope | Rejected:
    if not isinstance(signal.event, dict):
        return Rejected("aurora/event params must be a JSON object with header and payload")
    try:
        native = validate_native_event(signal.event)
    except EnvelopeError as exc:
        return Rejected(f"invalid aurora/event: {exc}")
    claimed = native.header.source
    if claimed is not None and (claimed.app != signal.app or claimed.instance != signal.instance):
        return Rejected(
            f"impersonation: app {signal.app!r} (instance {signal.instance!r}) sent an event "
            f"claiming source {claimed.app!r} (instance {claimed.instance!r})"
        )
    if is_reserved_type(native.payload.type):
        return Rejected(f"reserved type: apps may not emit {native.payload.type!r}")
    if native.payload.expire_at is not None and is_past(native.payload.expire_at, now=now):
        return Rejected(f"expired: expire_at {native.payload.expire_at} has passed")
    return _complete(signal, native)


def _complete(signal: NativeEventSignal, native: NativeEvent) -> EventEnvelope:
    header, body = native.header, native.payload
    trace = (
        Trace(traceparent=header.trace.traceparent, tracestate=header.trace.tracestate)
        if header.trace is not None
        else signal.trace
    )
    return EventEnvelope(
        header=Header(
            protocol=PROTOCOL,
            method=METHOD_EVENT,
            message_id=header.message_id or uuid5_text(_NATIVE_ID_NAMESPACE, signal.signal_id),
            timestamp=header.timestamp or signal.observed_at,
            source=Source(app=signal.app, instance=signal.instance),
            trace=trace,
        ),
        payload=EventPayload(
            type=body.type,
            session_id=body.session_id,
            summary=body.summary,
            data=body.data,
            expire_at=body.expire_at,
            bot=body.bot,
            workspace=body.workspace,
            conversation=body.conversation,
            actor=Actor(id=body.actor.id, kind=body.actor.kind) if body.actor else None,
            subject=EventSubject(kind=body.subject.kind, id=body.subject.id) if body.subject else None,
            source_event_type=body.source_event_type,
            raw_ref=body.raw_ref,
            synthetic=body.synthetic,
        ),
    )


def parent_trace(event: EventEnvelope, headers: Mapping[str, str] | None) -> Trace | None:
    """The trace an event continues: its own, else the one its signal's publisher was in (the
    signal's `traceparent` header); None when it starts a trace of its own."""
    if event.header.trace is not None:
        return event.header.trace
    traceparent = (headers or {}).get("traceparent")
    return Trace(traceparent=traceparent, tracestate=(headers or {}).get("tracestate")) if traceparent else None


def with_trace(event: EventEnvelope, headers: Mapping[str, str] | None, span: Trace | None = None) -> EventEnvelope:
    """The event carrying `span` (the bridge's span for it, when tracing is on), else the trace
    it continues (`parent_trace`), else a new one rooted at the event (`root_trace`)."""
    trace = span or parent_trace(event, headers) or root_trace(event.header.message_id)
    if trace == event.header.trace:
        return event
    return msgspec.structs.replace(event, header=msgspec.structs.replace(event.header, trace=trace))
