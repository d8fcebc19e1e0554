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


T = TypeVar("T")


def decode_bounded(decoder: msgspec.json.Decoder[T], data: bytes) -> T:
    """`decoder.decode(data)`, with nesting too deep to decode said as the DecodeError it is.

    msgspec raises RecursionError for input nested beyond the interpreter's limit; the edges
    map DecodeError (and ValidationError, a subclass) to a dead letter or an `invalid_request`
    reply, so deep input must be one too rather than an exception nobody expects.
    """
    try:
        return decoder.decode(data)
    except RecursionError as exc:
        raise msgspec.DecodeError(f"JSON nested too deeply to decode ({exc})") from exc
