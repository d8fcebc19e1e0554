"""`amp.admin.router.replay`: route again the stored events that found no route.

An event routed `route_not_found` (no binding took it: e.g. it came before the bindings were
applied) or `processor_not_found` keeps its trace, which names where the event is kept in the
events stream (`event_seq`). A replay reads the event back, decides with the bindings, agents and
pipelines saved now (as a dry run does) and, unless `dry_run`, dispatches it as the routing loop
would: the run's record, which is the run, created once per run id (the same run id for the same
event and binding), then the trace, marked `replayed`, written only over the revision the replay
read. So an event is dispatched once per binding however often, and however many at once, it is
replayed: a trace that says `dispatched` answers "already dispatched"; two replays racing
create the same record, which JetStream keeps once, and one of them writes the trace.
A dispatched app event keeps its trace in its run record (recorded_traces.py), not in KV: asked
for by id, it is "already dispatched" when a binding saved now has its record (one whose binding
is gone since is "not found"); `since` passes over it, as over every trace that is not replayable.
A replayable trace whose event the routing loop dispatched after all (a delivery stored the trace
and was not acked; the next found a binding) is "already dispatched": its record holds its trace.

Events are chosen by message id, or by time: every event stored since `since` whose trace is
replayable, at most `MAX_SCANNED` events looked at per request (`next_since` says where to go on).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.js.api import RawStreamMsg
from nats.js.errors import APIError, KeyNotFoundError, KeyWrongLastSequenceError, NotFoundError

from services.router.computed_traces import untraced_type
from services.router.config import RouterSettings
from services.router.dispatch import build_run
from services.router.events import decode_event
from services.router.recorded_traces import RecordedTraces
from services.router.selection import Decision, Processors, RouteTable, decide
from services.router.stores import RouterStores
from services.router.traces import encode_trace, trace_key
from shared.clock import parse_iso
from shared.contracts.envelope import EventEnvelope
from shared.contracts.route import REPLAYABLE, RouteTrace
from shared.contracts.run import run_id_for
from shared.contracts.subjects import Subjects
from shared.errors import EnvelopeError
from shared.jetstream.run_records import CREATE_ONLY, already_stored, run_record_subject
from shared.jetstream.streams import events_stream
from shared.nats.admin_service import AdminRequestError
from shared.observability.logs import get_logger

log = get_logger("aurora.router.replay")
MAX_IDS = 500  # message ids per request
MAX_SCANNED = 5000  # stored events looked at per `since` request
_decode_trace = msgspec.json.Decoder(RouteTrace).decode

# What became of each event (the reply's `outcome`).
DISPATCHED, ALREADY, WOULD, NO_ROUTE, NOT_REPLAYABLE, NOT_FOUND = (
    "dispatched", "already_dispatched", "would_dispatch", "no_route", "not_replayable", "not_found")

SavedRouting = Callable[[], Any]  # async () -> (RouteTable, Processors): what is saved now
FindEvent = Callable[[str], Awaitable[RawStreamMsg | None]]  # an untraced platform event by message id


@dataclass(frozen=True)
class _Stored:
    """A trace as read, with the revision a replay may write over."""

    trace: RouteTrace
    revision: int


class Replayer:
    def __init__(self, nc: NATS, subjects: Subjects, stores: RouterStores, settings: RouterSettings,
                 saved_routing: SavedRouting, *, capabilities: Mapping[str, tuple[str, ...]] | None = None,
                 find_untraced: FindEvent | None = None, recorded: RecordedTraces | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._js = nc.jetstream()
        self._subjects = subjects
        self._stores = stores
        self._config = settings.router
        self._saved_routing = saved_routing
        self._capabilities = capabilities or {}
        self._clock = clock
        self._stream = events_stream(subjects).name
        self._find_untraced = find_untraced
        self._recorded = recorded

    async def replay(self, body: dict[str, Any]) -> dict[str, Any]:
        ids, since = body.get("message_ids"), body.get("since")
        dry_run = body.get("dry_run", False)
        if (ids is None) == (since is None) or not isinstance(dry_run, bool):
            raise AdminRequestError("invalid_request", 'send {"message_ids": ["..."]} or {"since": "<ISO time>"}, '
                                    'and "dry_run": true to only show what the bindings would pick')
        table, processors = await self._saved_routing()
        if ids is not None:
            if not isinstance(ids, list) or not ids or len(ids) > MAX_IDS or \
                    not all(isinstance(i, str) and i for i in ids):
                raise AdminRequestError("invalid_request", f'"message_ids": a list of 1 to {MAX_IDS} message ids')
            results = [await self._by_id(message_id, table, processors, dry_run) for message_id in ids]
            return {"dry_run": dry_run, "results": results}
        if not isinstance(since, str):
            raise AdminRequestError("invalid_request", '"since": an ISO 8601 time with its offset')
        try:
            start = parse_iso(since)
        except ValueError as exc:
            raise AdminRequestError("invalid_request", f'"since" {since!r} is no ISO 8601 time: {exc}') from exc
        if start.tzinfo is None:
            raise AdminRequestError("invalid_request", f'"since" {since!r} needs its UTC offset (e.g. Z)')
        return {"dry_run": dry_run, **await self._since(start, table, processors, dry_run)}

    # ------------------------------------------------------------------ choosing events

    async def _by_id(self, message_id: str, table: RouteTable, processors: Processors,
                     dry_run: bool) -> dict[str, Any]:
        stored = await self._trace(message_id)
        if stored is None and self._recorded is not None:  # dispatched: its trace is in its run record
            record = await self._recorded.by_bindings(message_id, (ranked.id for ranked in table.ranked))
            if record is not None:
                return _result(message_id, ALREADY, binding_id=record.binding_id,
                               target=msgspec.to_builtins(record.target), run_id=record.run_id)
        if stored is None and self._find_untraced is not None:
            untraced = await self._find_untraced(message_id)
            if untraced is not None:  # a platform event no binding took: it stored no trace
                return await self._replay(untraced, _unrouted(message_id, untraced), table, processors, dry_run,
                                          expected_id=message_id)
        if stored is None:
            return _result(message_id, NOT_FOUND, reason=f"no route trace for message {message_id!r}")
        refusal = _not_replayable(stored.trace)
        if refusal is not None:
            return refusal
        if stored.trace.event_seq is None:
            return _result(message_id, NOT_FOUND, reason="its trace does not say where the event is stored "
                           "(routed before replays were possible): choose it with --since")
        try:
            msg = await self._js.get_msg(self._stream, seq=stored.trace.event_seq)
        except NotFoundError:
            return _result(message_id, NOT_FOUND, reason=f"the event is no longer in {self._stream} "
                           "(events are kept 7 days)")
        return await self._replay(msg, stored, table, processors, dry_run, expected_id=message_id)

    async def _since(self, start: datetime, table: RouteTable, processors: Processors,
                     dry_run: bool) -> dict[str, Any]:
        results: list[dict[str, Any]] = []
        seq, scanned = await self._first_at_or_after(start), 0
        while True:
            msg = await self._next(seq)
            if msg is None:
                return {"results": results, "scanned": scanned}
            if scanned == MAX_SCANNED:
                return {"results": results, "scanned": scanned, "next_since": _iso(msg.time)}
            scanned += 1
            seq = (msg.seq or seq) + 1
            message_id = (msg.headers or {}).get("Nats-Msg-Id") or _message_id(msg.data or b"")
            stored = await self._trace(message_id) if message_id else None
            if stored is None and message_id is not None and untraced_type(msg.subject or "", self._subjects.prefix):
                stored = _unrouted(message_id, msg)  # a platform event no binding took: it stored no trace
            if stored is None or message_id is None:
                continue
            if stored.trace.status in REPLAYABLE:
                results.append(await self._replay(msg, stored, table, processors, dry_run, expected_id=message_id))
            elif stored.trace.replayed:  # replayed before: said, so a second replay shows it did nothing
                results.append(_result(message_id, ALREADY, binding_id=stored.trace.binding_id,
                                       target=msgspec.to_builtins(stored.trace.target), run_id=stored.trace.run_id))

    async def _first_at_or_after(self, start: datetime) -> int:
        """The first sequence stored at or after `start` (a binary search over the stream)."""
        state = (await self._js.stream_info(self._stream)).state
        low, high = max(state.first_seq, 1), state.last_seq + 1
        while low < high:
            middle = (low + high) // 2
            found = await self._next(middle)
            if found is None or found.seq is None or found.seq >= high:
                high = middle
            elif found.time is not None and found.time < start:
                low = found.seq + 1
            else:
                high = middle
        return low

    async def _next(self, seq: int) -> RawStreamMsg | None:
        try:
            return await self._js.get_msg(self._stream, seq=seq, subject=self._subjects.events_all, next=True)
        except NotFoundError:
            return None

    async def _trace(self, message_id: str) -> _Stored | None:
        try:
            entry = await self._stores.routes.get(trace_key(message_id))
        except KeyNotFoundError:
            return None
        if entry.value is None or entry.revision is None:
            return None
        return _Stored(_decode_trace(entry.value), entry.revision)

    async def _routed_since(self, message_id: str, binding_id: str) -> bool:
        """Whether the routing loop dispatched the event after its replayable trace was stored (a
        delivery stored the trace, was not acked, and came again once a binding took it): its run
        record then holds its trace (`route`), which a replay's record never does."""
        if self._recorded is None:
            return False
        record = await self._recorded.by_bindings(message_id, (binding_id,))
        return record is not None and record.route is not None

    # ------------------------------------------------------------------ one event

    async def _replay(self, msg: RawStreamMsg, stored: _Stored, table: RouteTable, processors: Processors,
                      dry_run: bool, *, expected_id: str) -> dict[str, Any]:
        raw = msg.data or b""
        try:
            event = decode_event(raw)
        except EnvelopeError as exc:
            return _result(expected_id, NOT_REPLAYABLE, reason=f"the stored event is invalid: {exc}")
        if event.header.message_id != expected_id:
            return _result(expected_id, NOT_FOUND, reason=f"{self._stream} sequence {msg.seq} holds another event")
        now = self._clock()
        decision = decide(event, table, processors, now=now)
        if decision.status != "dispatched" or decision.target is None or decision.binding_id is None:
            return _result(expected_id, NO_ROUTE, status=decision.status, reason=decision.reason)
        run_id = run_id_for(expected_id, decision.binding_id)
        found = {"binding_id": decision.binding_id, "target": msgspec.to_builtins(decision.target), "run_id": run_id}
        if await self._routed_since(expected_id, decision.binding_id):
            return _result(expected_id, ALREADY, **found)
        if dry_run:
            return _result(expected_id, WOULD, **found)
        at = now.isoformat(timespec="milliseconds")
        run = build_run(event, raw, binding_id=decision.binding_id, target=decision.target, timestamp=at,
                        router_instance=self._config.instance, inline_limit=self._config.inline_limit,
                        store_bucket=self._stores.run_events_bucket,
                        capabilities=self._capabilities.get(event.header.source.app, ()))
        if run.offload is not None:
            await self._stores.run_events.put(run.offload.name, raw)
        try:  # the record is the run: created once (a replay that stopped half-way made it already)
            await self._js.publish(run_record_subject(self._stores.run_records_bucket, run_id), run.record,
                                   headers=CREATE_ONLY)
        except APIError as exc:
            if not already_stored(exc):
                raise
        trace = _dispatched_trace(event, stored.trace, decision.binding_id, decision, run_id, at, self._config.instance)
        try:
            await self._stores.routes.update(trace_key(expected_id), encode_trace(trace), last=stored.revision)
        except KeyWrongLastSequenceError:
            # Another replay wrote the trace first: it published this very run, kept once.
            again = await self._trace(expected_id)
            if again is not None and again.trace.status == "dispatched":
                return _result(expected_id, ALREADY, binding_id=again.trace.binding_id,
                               target=msgspec.to_builtins(again.trace.target), run_id=again.trace.run_id)
            raise
        log.info("event replayed", message_id=expected_id, binding=decision.binding_id, run=run_id)
        return _result(expected_id, DISPATCHED, **found)


def _dispatched_trace(event: EventEnvelope, before: RouteTrace, binding_id: str, decision: Decision, run_id: str,
                      at: str, instance: str) -> RouteTrace:
    return RouteTrace(
        message_id=before.message_id, status="dispatched", binding_id=binding_id, target=decision.target,
        run_id=run_id, steps=decision.steps, candidates=decision.candidates, reason=decision.reason,
        event_type=event.payload.type, source_app=event.header.source.app, synthetic=event.payload.synthetic,
        at=at, router=instance, event_seq=before.event_seq, replayed=True)


def _unrouted(message_id: str, msg: RawStreamMsg) -> _Stored:
    """What a trace would say of a platform event no binding took; revision 0: the replay's
    trace is written only if no other was meanwhile."""
    return _Stored(RouteTrace(message_id=message_id, status="route_not_found", at="", event_seq=msg.seq), 0)


def _not_replayable(trace: RouteTrace) -> dict[str, Any] | None:
    if trace.status == "dispatched":
        return _result(trace.message_id, ALREADY, binding_id=trace.binding_id,
                       target=msgspec.to_builtins(trace.target), run_id=trace.run_id)
    if trace.status not in REPLAYABLE:
        return _result(trace.message_id, NOT_REPLAYABLE, status=trace.status,
                       reason=f"it was routed {trace.status}; only events that found no route "
                              f"({', '.join(REPLAYABLE)}) are replayed")
    return None


def _result(message_id: str, outcome: str, **fields: Any) -> dict[str, Any]:
    return {"message_id": message_id, "outcome": outcome, **{k: v for k, v in fields.items() if v is not None}}


def _message_id(data: bytes) -> str | None:
    try:
        value = msgspec.json.decode(data)["header"]["message_id"]
    except (msgspec.DecodeError, TypeError, KeyError):
        return None
    return value if isinstance(value, str) and value else None


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when is not None else None
