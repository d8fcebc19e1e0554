"""The router's own admin endpoints: `dry_run`, `trace` and `health` (`amp.admin.router.*`);
`replay` is services/router/replay.py's.

A dry run reads the buckets as they are now (not the router's in-memory copy), so it answers
for a binding applied a moment ago; it routes in memory and publishes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TypeVar

import msgspec

from services.router.catalog import decode_agent, decode_pipeline
from services.router.computed_traces import MAX_LOOKED_AT, ComputedTraces
from services.router.events import decode_event, encode_document
from services.router.recorded_traces import MAX_LOOKED_AT as MAX_RECORDS_READ
from services.router.recorded_traces import RecordedTraces, trace_of
from services.router.router import RouterStats
from services.router.selection import RouteTable, StaticProcessors, decide
from services.router.stores import RouterStores
from services.router.traces import read_trace
from shared.contracts.binding import Binding
from shared.contracts.resource import ResourceError, parse_resource
from shared.contracts.route import REPLAYABLE, DryRunReply, RouteTrace
from shared.errors import EnvelopeError
from shared.jetstream.kvmirror import read_all
from shared.nats.admin_service import AdminHandler, AdminRequestError
from shared.observability.logs import get_logger

log = get_logger("aurora.router.admin")
T = TypeVar("T")


class RouterAdmin:
    def __init__(self, stores: RouterStores, stats: RouterStats, catalog: Callable[[], dict[str, object]],
                 *, instance: str, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._stores = stores
        self._stats = stats
        self._catalog = catalog
        self._instance = instance
        self._clock = clock
        self.computed: ComputedTraces | None = None  # the unstored traces, computed when asked (wiring sets it)
        self.recorded: RecordedTraces | None = None  # dispatched events' traces, in run records (wiring sets it)

    def endpoints(self) -> dict[str, AdminHandler]:
        return {"dry_run": self.dry_run, "trace": self.trace, "health": self.health}

    async def dry_run(self, body: dict[str, Any]) -> dict[str, Any]:
        event_doc = body.get("event")
        if not isinstance(event_doc, dict):
            raise AdminRequestError("invalid_request", 'send {"event": {...}, "bindings": [optional]}')
        drafts = body.get("bindings")
        table = RouteTable(_drafts(drafts) if drafts is not None else await self._saved_bindings())
        try:
            event = decode_event(encode_document(event_doc))
        except EnvelopeError as exc:
            reply = DryRunReply(status="invalid_event", reason=f"invalid event: {exc}")
            return msgspec.to_builtins(reply)  # type: ignore[no-any-return]
        processors = await self._saved_processors()
        decision = decide(event, table, processors, now=self._clock(), explain=True)
        reply = DryRunReply(status=decision.status, binding_id=decision.binding_id,
                            target=decision.target, steps=decision.steps, reason=decision.reason)
        return msgspec.to_builtins(reply)  # type: ignore[no-any-return]

    async def saved_routing(self) -> tuple[RouteTable, StaticProcessors]:
        """The bindings, agents and pipelines as the buckets hold them now (a replay's)."""
        return RouteTable(await self._saved_bindings()), await self._saved_processors()

    async def _saved_processors(self) -> StaticProcessors:
        return StaticProcessors(
            agents=_decode_all(await read_all(self._stores.agents), decode_agent),
            pipelines=_decode_all(await read_all(self._stores.pipelines), decode_pipeline),
        )

    async def _saved_bindings(self) -> list[Binding]:
        saved = []
        for key, value in (await read_all(self._stores.bindings)).items():
            try:
                saved.append(parse_resource(Binding, msgspec.json.decode(value)))
            except (ResourceError, msgspec.DecodeError) as exc:
                log.warning("stored binding ignored", key=key, error=str(exc))
        return saved

    async def trace(self, body: dict[str, Any]) -> dict[str, Any]:
        message_id = body.get("message_id")
        if not isinstance(message_id, str) or not message_id:
            raise AdminRequestError("invalid_request", 'send {"message_id": "..."}')
        found = await read_trace(self._stores.routes, message_id)
        if found is None or (found.status in REPLAYABLE and not found.replayed):
            # A replayable trace may be older than the event's run: a delivery that stored it was
            # not acked and the event came again once a binding took it (its trace then in the record).
            found = await self._unstored(message_id, exact_only=found is not None) or found
        if found is None:
            looked = ""
            if self.recorded is not None:
                looked += (f"; no run record of it under a binding saved now, nor among the newest "
                           f"{MAX_RECORDS_READ:,} run records (a record whose binding is gone is found only "
                           f"there; records are kept 30 days)")
            if self.computed is not None:
                looked += f"; no task.*/tool.* event of that id among the newest {MAX_LOOKED_AT:,} stream reads"
            raise AdminRequestError("not_found", f"no route trace for message {message_id!r}{looked}")
        return msgspec.to_builtins(found)  # type: ignore[no-any-return]

    async def _unstored(self, message_id: str, *, exact_only: bool = False) -> RouteTrace | None:
        """A trace not in KV_AMP_ROUTES: a dispatched event's, in its run record (exact reads by the
        bindings saved now first); else read for in the records and the events streams at once."""
        recorded, computed = self.recorded, self.computed
        if recorded is not None:
            record = await recorded.by_bindings(message_id, [b.id for b in await self._saved_bindings()])
            if record is not None and (trace := trace_of(record)) is not None:
                return trace
        if exact_only:
            return None
        from_record, from_events = await asyncio.gather(
            recorded.by_reading(message_id) if recorded is not None else _nothing(),
            computed.trace(message_id) if computed is not None else _nothing())
        return (trace_of(from_record) if from_record is not None else None) or from_events

    async def health(self, _: dict[str, Any]) -> dict[str, Any]:
        stats = self._stats
        return {
            "status": "ok",
            "instance": self._instance,
            "received": stats.received,
            "statuses": dict(stats.statuses),
            "dead_lettered": stats.dead_lettered,
            "retried": stats.retried,
            "last_error": stats.last_error,
            **self._catalog(),
        }


async def _nothing() -> None:
    return None


def _drafts(drafts: object) -> list[Binding]:
    if not isinstance(drafts, list):
        raise AdminRequestError("invalid_request", '"bindings" must be a list of binding documents')
    parsed: list[Binding] = []
    for index, draft in enumerate(drafts):
        if not isinstance(draft, dict):
            raise AdminRequestError("invalid", f"bindings[{index}] is not a document")
        try:
            parsed.append(parse_resource(Binding, {"kind": "Binding", **draft}))
        except ResourceError as exc:
            raise AdminRequestError(
                "invalid", f"bindings[{index}] (id={draft.get('id')!r}) rejected: {exc}"
            ) from exc
    ids = [b.id for b in parsed]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise AdminRequestError("invalid", f"draft bindings repeat ids: {', '.join(duplicates)}")
    return parsed


def _decode_all(items: dict[str, bytes], decode: Callable[[bytes], T]) -> dict[str, T]:
    decoded: dict[str, T] = {}
    for key, value in items.items():
        try:
            decoded[key] = decode(value)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            log.warning("stored entry ignored", key=key, error=str(exc))
    return decoded
