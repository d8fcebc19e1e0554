"""`event_history`: earlier events of the current session, read from the events stream on demand.

A run carries only its own event; an agent that needs more asks for it. The scan is bounded:
events of the same source app within the configured window, at most `scan_limit` of them, and
only those before the current event.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import msgspec
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from shared.contracts.envelope import EventEnvelope
from shared.contracts.subjects import Subjects, app_token
from shared.jetstream.consumers import pull_ephemeral

TOOL_NAME = "event_history"
DESCRIPTION = (
    "Earlier events of the current session (oldest first), from the platform's event log. "
    "The current event is already in the conversation; call this only when earlier context is needed."
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many events, at most (10)."},
        "types": {"type": "array", "items": {"type": "string"},
                  "description": "Only these event types, e.g. [\"message.received\"]."},
    },
    "additionalProperties": False,
}


def llm_descriptor() -> dict[str, Any]:
    return {"type": "function", "function": {"name": TOOL_NAME, "description": DESCRIPTION, "parameters": PARAMETERS}}


class History(Protocol):
    async def earlier(self, event: EventEnvelope, *, limit: int, types: list[str] | None) -> dict[str, Any]: ...


class _Light(msgspec.Struct):
    header: _LightHeader
    payload: _LightPayload


class _LightHeader(msgspec.Struct):
    message_id: str
    timestamp: str = ""


class _LightPayload(msgspec.Struct):
    type: str
    session_id: str | None = None


_light = msgspec.json.Decoder(_Light)
_full = msgspec.json.Decoder(EventEnvelope)


def summary_of(event: EventEnvelope, data_limit: int = 1000) -> dict[str, Any]:
    p = event.payload
    data = msgspec.json.encode(p.data).decode()
    return {
        "message_id": event.header.message_id,
        "timestamp": event.header.timestamp,
        "type": p.type,
        "summary": p.summary,
        "actor": msgspec.to_builtins(p.actor) if p.actor else None,
        "data": p.data if len(data) <= data_limit else data[:data_limit] + "…",
    }


class StreamHistory:
    def __init__(self, js: JetStreamContext, subjects: Subjects, *, window: float, scan_limit: int) -> None:
        self._js = js
        self._subjects = subjects
        self._stream = subjects.stream("EVENTS")
        self._window = window
        self._limit = scan_limit

    async def earlier(self, event: EventEnvelope, *, limit: int, types: list[str] | None) -> dict[str, Any]:
        session = event.payload.session_id
        if session is None:
            return {"events": [], "note": "this event belongs to no session, so it has no history"}
        subject = f"{self._subjects.prefix}.evt.{app_token(event.header.source.app)}.>"
        start = datetime.now(UTC) - timedelta(seconds=self._window)
        config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_TIME, opt_start_time=start,
                                ack_policy=AckPolicy.NONE, filter_subject=subject, inactive_threshold=5.0,
                                mem_storage=True)
        try:
            sub = await pull_ephemeral(self._js, self._stream, subject, config, owner="runner")
        except NotFoundError:
            return {"events": [], "note": "the event log is not available"}
        found: list[bytes] = []
        scanned, complete = 0, False
        try:
            while scanned < self._limit and not complete:
                try:
                    msgs = await sub.fetch(256, timeout=1.0)
                except (NatsTimeoutError, TimeoutError):
                    complete = True
                    break
                for msg in msgs:
                    scanned += 1
                    light = _light.decode(msg.data)
                    if light.header.message_id == event.header.message_id:
                        complete = True
                        break
                    if light.payload.session_id == session and (not types or light.payload.type in types):
                        found.append(msg.data)
                        del found[:-limit]
                    if msg.metadata.num_pending == 0:
                        complete = True
                        break
        finally:
            await sub.unsubscribe()
        result: dict[str, Any] = {"events": [summary_of(_full.decode(raw)) for raw in found]}
        if not complete:
            result["note"] = f"only the latest {scanned} events of the source app were searched"
        return result
