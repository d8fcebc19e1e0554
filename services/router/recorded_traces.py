"""Route traces of dispatched events, kept in their run records instead of KV_AMP_ROUTES.

An event that became a run already costs a stored run record (what the gateway decides the
run's tool calls from, keyed by the run id). Its trace is a field of that record (`route`), not
a message of its own: one stored message an event fewer (issue 38, docs/benchmarks.md, "Fewer
stored messages per event"). The field holds only what the record does not say already, the
bindings tried as compact triples, so a record grows by about two thirds of a trace.
The gateway and mcp-edge decode records as `RunRecord`, which has no `route`: msgspec skips
it, so custody decides from, and caches, exactly what it did before.

One kind of dispatched event keeps a stored trace: a platform `task.*`/`tool.*` event that some
binding took. `aurora route replay --since` takes such an event without a stored trace as one no
binding took (computed_traces.py); a trace it could not see would let it dispatch the event again.

`aurora route trace` (the router's `trace` endpoint) finds a record by the event's id:
- exactly, for any age: the record's key is `run_id_for(event id, binding id)`, so the run ids
  the event would have under every binding saved now are read (one message get each);
- for a binding deleted or renamed since, by reading KV_AMP_RUN_RECORDS newest first
  (stream_search.py), at most `MAX_LOOKED_AT` records: an older one is "not found".
Records are kept 30 days (their bucket's TTL), traces in KV_AMP_ROUTES 7: a routed event's trace
is kept longer than before, unless its binding is gone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

import msgspec
from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg
from nats.js.errors import NotFoundError

from services.router.computed_traces import UNTRACED_WHEN_UNROUTED
from services.router.selection import Decision
from services.router.stream_search import newest_match
from shared.contracts.envelope import Header
from shared.contracts.route import RouteStep, RouteTrace
from shared.contracts.run import ObjectRef, RunRecord, run_id_for
from shared.jetstream.run_records import is_record_key, record_keys, record_subject

MAX_LOOKED_AT = 20_000  # run records read at most, newest first, for an event whose binding is gone
MAX_BINDINGS = 2_000  # saved bindings whose run ids are tried exactly (more are left to the stream's reads)
_PARALLEL_GETS = 64


NO_EVENT = msgspec.Raw(b"null")  # a run whose event is referenced (`event_ref`), or a record without a run


class RouteNote(msgspec.Struct, frozen=True, kw_only=True):
    """The part of a dispatched event's trace its run record does not hold already."""

    steps: tuple[tuple[str, bool, str], ...] = ()  # (binding id, passed, reason): a RouteStep each
    candidates: int = 0
    reason: str | None = None
    event_type: str
    at: str  # when it was routed (the record's `event_at` is the event's own time)
    router: str | None = None


class TracedRunRecord(RunRecord, frozen=True, kw_only=True):
    """A run record as the router writes it: the run (`shared.contracts.run.RecordedRun`'s fields:
    the run's header, the event's bytes inline or its reference) and the event's route, when kept
    here. A record written before runs moved into records has neither run nor, maybe, route."""

    header: Header | None = None
    event: msgspec.Raw = NO_EVENT  # the event's bytes as they arrived (msgspec decodes no `Raw | None`)
    event_ref: ObjectRef | None = None
    route: RouteNote | None = None


_decode = msgspec.json.Decoder(TracedRunRecord).decode


def trace_in_record(event_type: str) -> bool:
    """Whether a dispatched event of this type has its trace in its run record (else in KV)."""
    return not event_type.startswith(UNTRACED_WHEN_UNROUTED)


def route_note(decision: Decision, event_type: str, at: str, router: str) -> RouteNote:
    return RouteNote(steps=tuple([(s.binding_id, s.passed, s.reason) for s in decision.steps]),
                     candidates=decision.candidates, reason=decision.reason, event_type=event_type,
                     at=at, router=router)


def trace_of(record: TracedRunRecord) -> RouteTrace | None:
    """The trace as it was stored before it moved into the record; None for a record without one
    (written before, or by a replay, whose trace is in KV_AMP_ROUTES)."""
    note = record.route
    if note is None:
        return None
    return RouteTrace(
        message_id=record.event_message_id, status="dispatched", binding_id=record.binding_id,
        target=record.target, run_id=record.run_id,
        steps=tuple(RouteStep(binding_id=b, passed=passed, reason=reason) for b, passed, reason in note.steps),
        candidates=note.candidates, reason=note.reason, event_type=note.event_type, source_app=record.source_app,
        synthetic=record.synthetic, at=note.at, router=note.router,
    )


class RecordedTraces:
    """Finds the run record an event became, by the event's message id."""

    def __init__(self, js: JetStreamContext, bucket: str) -> None:
        self._js = js
        self._bucket = bucket
        self._stream = f"KV_{bucket}"

    async def by_bindings(self, message_id: str, binding_ids: Iterable[str]) -> TracedRunRecord | None:
        """The event's record under one of these bindings (exact reads, whatever its age), or None."""
        run_ids = [run_id for run_id in (run_id_for(message_id, b) for b in list(binding_ids)[:MAX_BINDINGS])
                   if is_record_key(run_id)]
        for start in range(0, len(run_ids), _PARALLEL_GETS):
            chunk = run_ids[start:start + _PARALLEL_GETS]
            for record in await asyncio.gather(*(self._get(run_id) for run_id in chunk)):
                if record is not None and record.event_message_id == message_id:
                    return record
        return None

    async def by_reading(self, message_id: str) -> TracedRunRecord | None:
        """The event's record among the newest `MAX_LOOKED_AT` records, or None."""
        needle = b'"event_message_id":' + msgspec.json.encode(message_id)

        def match(msg: RawStreamMsg) -> bool:
            if not msg.data or needle not in msg.data:
                return False
            record = _decoded(msg.data)
            return record is not None and record.event_message_id == message_id

        found = await newest_match(self._js, self._stream, record_subject(self._bucket, ">"), match,
                                   budget=MAX_LOOKED_AT)
        return _decoded(found.data) if found is not None and found.data else None

    async def _get(self, run_id: str) -> TracedRunRecord | None:
        for key in record_keys(run_id):  # a run's record, else one written before runs moved in
            try:
                msg = await self._js.get_msg(self._stream, subject=record_subject(self._bucket, key))
            except NotFoundError:
                continue
            return _decoded(msg.data) if msg.data else None  # a deleted record has no data
        return None


def _decoded(data: bytes) -> TracedRunRecord | None:
    try:
        return _decode(data)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
