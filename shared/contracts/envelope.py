"""The AMP envelope as msgspec structs: the hot-path form, same JSON as the pydantic edge models."""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

import msgspec

PROTOCOL = "amp/1.0"
METHOD_EVENT = "aurora/event"

ActorKind = Literal["user", "system", "api"]


class Source(msgspec.Struct, frozen=True, kw_only=True):
    """Which app instance an envelope comes from; set by the platform, never trusted from apps."""

    app: str
    instance: str = "default"


class Trace(msgspec.Struct, frozen=True, kw_only=True):
    """W3C trace context carried inside the envelope (and mirrored in NATS headers)."""

    traceparent: str | None = None
    tracestate: str | None = None


class Header(msgspec.Struct, frozen=True, kw_only=True):
    protocol: str = PROTOCOL
    method: str
    message_id: str
    timestamp: str
    source: Source
    trace: Trace | None = None


class Actor(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    kind: ActorKind


class EventSubject(msgspec.Struct, frozen=True, kw_only=True):
    """What an event is about (a message, a member, a request …)."""

    kind: str
    id: str


class EventPayload(msgspec.Struct, frozen=True, kw_only=True):
    """The payload of an `aurora/event` envelope (seed shape plus the routing fields)."""

    type: str
    session_id: str | None = None
    summary: str | None = None
    data: dict[str, Any] = msgspec.field(default_factory=dict)
    expire_at: str | None = None
    bot: str | None = None
    workspace: str | None = None
    conversation: str | None = None
    actor: Actor | None = None
    subject: EventSubject | None = None
    source_event_type: str | None = None
    raw_ref: str | None = None
    synthetic: bool = False


P = TypeVar("P")


class Envelope(msgspec.Struct, Generic[P], frozen=True, kw_only=True):
    """An AMP envelope: a header every service reads, a payload whose shape depends on `method`."""

    header: Header
    payload: P


EventEnvelope = Envelope[EventPayload]
