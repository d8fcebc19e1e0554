"""Route traces of the platform's own unrouted events, computed when an operator asks.

Every event the router consumes gets a stored trace except one kind: a `task.*` or `tool.*`
event (types only the platform may emit: the runner's task states, the bridge's tool results)
that no binding took. Those are most of the events of a playbook run and almost never asked
about; storing a `route_not_found` trace for each was three of the twenty messages stored per
playbook event (docs/benchmarks.md, "Fewer stored messages per event").

`aurora route trace` still answers for such an event: the router finds it in the events
stream (newest first, at most `MAX_LOOKED_AT` platform events of its kind looked at), routes it
again in memory with the bindings, agents and pipelines saved now, as a dry run does, and says
so (`computed`: true, and the reason begins with "not stored"). Nothing is dispatched.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg

from services.router.events import decode_event
from services.router.selection import decide
from services.router.stream_search import newest_match
from shared.contracts.route import RouteStatus, RouteTrace
from shared.contracts.subjects import Subjects
from shared.errors import EnvelopeError
from shared.jetstream.streams import events_stream

# Event types only the platform emits (validation.RESERVED_EVENT_PREFIXES) whose unrouted
# events keep no trace of their own.
UNTRACED_WHEN_UNROUTED = ("task.", "tool.")
MAX_LOOKED_AT = 20_000  # message reads at most, newest first (each one platform event of the asked-for kind)
_TASK_EVENT_ID = "task-"  # task events' ids, task-<task id>-<n> (services/event_bridge/task_events.py)
SavedRouting = Callable[[], Any]  # async () -> (RouteTable, Processors), as replay.py's


def trace_stored(status: RouteStatus, event_type: str) -> bool:
    """Whether the routing loop stores this event's trace."""
    return status != "route_not_found" or not event_type.startswith(UNTRACED_WHEN_UNROUTED)


def untraced_type(subject: str, prefix: str) -> bool:
    """Whether an event stored on `subject` (`<prefix>.evt.<app>.<type…>`) is of a kind whose
    unrouted events keep no trace: a replay takes such an event without a trace as unrouted."""
    head = f"{prefix}.evt."
    parts = subject[len(head):].split(".", 1) if subject.startswith(head) else []
    return len(parts) == 2 and parts[1].startswith(UNTRACED_WHEN_UNROUTED)


class ComputedTraces:
    def __init__(self, js: JetStreamContext, subjects: Subjects, saved_routing: SavedRouting, *, instance: str,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._js = js
        self._subjects = subjects
        self._saved_routing = saved_routing
        self._instance = instance
        self._clock = clock
        self._stream = events_stream(subjects).name

    async def trace(self, message_id: str) -> RouteTrace | None:
        """The trace the event would get now, or None: no such platform event was found."""
        msg = await self.find_event(message_id)
        if msg is None:
            return None
        try:
            event = decode_event(msg.data or b"")
        except EnvelopeError:
            return None  # an invalid event has a stored trace; this is not the one asked for
        table, processors = await self._saved_routing()
        now = self._clock()
        decision = decide(event, table, processors, now=now)
        stored_at = msg.time.isoformat(timespec="milliseconds") if msg.time else "?"
        reason = (f"not stored: the router keeps no trace of a {UNTRACED_WHEN_UNROUTED[0]}* or "
                  f"{UNTRACED_WHEN_UNROUTED[1]}* event that matched no binding; computed now from the bindings "
                  f"saved now (the event was stored at {stored_at})")
        if decision.reason:
            reason += f": {decision.reason}"
        return RouteTrace(
            message_id=message_id, status=decision.status, binding_id=decision.binding_id, target=decision.target,
            steps=decision.steps, candidates=decision.candidates, reason=reason, event_type=event.payload.type,
            source_app=event.header.source.app, synthetic=event.payload.synthetic,
            at=now.isoformat(timespec="milliseconds"), router=self._instance, event_seq=msg.seq, computed=True,
        )

    async def find_event(self, message_id: str) -> RawStreamMsg | None:
        """The platform event stored under this message id (its kind told by the id's form), or None.
        The stream is read newest first, in windows (services/router/stream_search.py)."""
        kind = "task" if message_id.startswith(_TASK_EVENT_ID) else "tool"
        subject = f"{self._subjects.prefix}.evt.*.{kind}.>"
        return await newest_match(self._js, self._stream, subject,
                                  lambda msg: (msg.headers or {}).get("Nats-Msg-Id") == message_id,
                                  budget=MAX_LOOKED_AT)
