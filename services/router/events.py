"""Reading an event on the router's hot path: msgspec types plus the edge's value constraints.

The router is a reader, not an edge (ARCHITECTURE §2): it checks what it relies on — the
types of every field, the protocol and method, the id, type and app patterns, RFC 3339
timestamps with an offset, non-empty actor and subject ids — with the same patterns as the
strict edge model, but ignores fields it does not know, so an event carrying a field added
later is still routed. Anything else is an `invalid_event` with the field named.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

import msgspec
from nats.aio.msg import Msg
from nats.errors import NotJSMessageError

from shared.contracts.envelope import METHOD_EVENT, PROTOCOL, EventEnvelope
from shared.contracts.validation import APP_ID_PATTERN, EVENT_TYPE_PATTERN, MESSAGE_ID_PATTERN
from shared.errors import EnvelopeError

_decoder = msgspec.json.Decoder(EventEnvelope)


def _full(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern.removeprefix("^").removesuffix("$"))


_APP = _full(APP_ID_PATTERN)
_TYPE = _full(EVENT_TYPE_PATTERN)
_MESSAGE_ID = _full(MESSAGE_ID_PATTERN)
_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})")
_PATH = re.compile(r" - at `\$\.?(.*)`$")


def _timestamp_problem(value: str) -> str | None:
    if not _RFC3339.fullmatch(value):
        return "must be an RFC 3339 timestamp with an offset, e.g. 2026-06-19T12:00:00+08:00"
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return "is not a real date and time"
    return None


def problems_of(event: EventEnvelope) -> list[tuple[str, str]]:
    """What a type-correct envelope still gets wrong, as (field, reason) pairs."""
    h, p = event.header, event.payload
    problems: list[tuple[str, str]] = []
    if h.protocol != PROTOCOL:
        problems.append(("header.protocol", f"must be {PROTOCOL!r}"))
    if h.method != METHOD_EVENT:
        problems.append(("header.method", f"must be {METHOD_EVENT!r}"))
    if not _MESSAGE_ID.fullmatch(h.message_id):
        problems.append(("header.message_id", f"must match {MESSAGE_ID_PATTERN}"))
    if (reason := _timestamp_problem(h.timestamp)) is not None:
        problems.append(("header.timestamp", reason))
    if not _APP.fullmatch(h.source.app):
        problems.append(("header.source.app", f"must match {APP_ID_PATTERN}"))
    if not 0 < len(h.source.instance) <= 64:
        problems.append(("header.source.instance", "must have 1 to 64 characters"))
    if len(p.type) > 128 or not _TYPE.fullmatch(p.type):
        problems.append(("payload.type", f"must match {EVENT_TYPE_PATTERN} (at most 128 characters)"))
    if p.expire_at is not None and (reason := _timestamp_problem(p.expire_at)) is not None:
        problems.append(("payload.expire_at", reason))
    if p.actor is not None and not p.actor.id:
        problems.append(("payload.actor.id", "must not be empty"))
    if p.subject is not None and not (p.subject.kind and p.subject.id):
        problems.append(("payload.subject", "kind and id must not be empty"))
    return problems


def decode_event(raw: bytes) -> EventEnvelope:
    """Decode and check one event; raise EnvelopeError naming each bad field."""
    try:
        event = _decoder.decode(raw)
    except msgspec.ValidationError as exc:
        text = str(exc)
        match = _PATH.search(text)
        field = match.group(1) if match and match.group(1) else "(root)"
        raise EnvelopeError([(field, _PATH.sub("", text))]) from exc
    except (msgspec.DecodeError, RecursionError, ValueError) as exc:
        raise EnvelopeError([("(root)", f"not standard JSON: {exc}")]) from exc
    problems = problems_of(event)
    if problems:
        raise EnvelopeError(problems)
    return event


def encode_document(doc: Any) -> bytes:
    """A JSON document (e.g. a dry run's event) as the bytes the hot path would read."""
    try:
        return json.dumps(doc, allow_nan=False, ensure_ascii=False).encode()
    except (TypeError, ValueError) as exc:
        raise EnvelopeError([("(root)", f"not plain JSON data: {exc}")]) from exc


def stream_sequence(msg: Msg) -> int | None:
    """Where the event is kept in the events stream (what a replay reads it back by)."""
    try:
        return int(msg.metadata.sequence.stream)
    except (NotJSMessageError, ValueError, TypeError, AttributeError):  # not a JetStream delivery
        return None


def fallback_id(msg: Msg) -> str:
    """A trace key for an event too broken to trust: its header id, its stored id, or its
    stream position."""
    try:
        value = json.loads(msg.data)["header"]["message_id"]
        if isinstance(value, str) and 0 < len(value) <= 128:
            return value
    except (ValueError, TypeError, KeyError, RecursionError):
        pass
    stored = (msg.headers or {}).get("Nats-Msg-Id")
    if stored:
        return stored
    meta = msg.metadata
    return f"{meta.stream}:{meta.sequence.stream}"
