"""The routing loop: pull events, decide, publish runs and traces, ack what JetStream stored.

Per batch: every event is validated and routed in memory; large events go to the Object Store;
invalid ones are dead-lettered; every run's record — which is the run (what runners consume and
the gateway decides its tool calls from: one stored message per routed event, issue 38) — and
every trace is published without waiting; while the next batch is fetched and routed, the
batch waits once for all the acknowledgements. An event is acked only when its record and its
trace were stored. A crash anywhere redelivers the event to another router: it routes to the
same run id, whose record is created once (create-only: the second write is refused as
`wrong last sequence`, which counts as stored), and the same trace is written again — nothing
lost, nothing doubled. A dispatched app event's trace is in its run record (recorded_traces.py);
a `task.*`/`tool.*` event no binding took stores none: computed when asked (computed_traces.py).
An event no binding took waits for a look at the bindings shared with others (unrouted.py)."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig

from services.router.catalog import RouteCatalog
from services.router.computed_traces import trace_stored
from services.router.dispatch import RunMessage, build_run
from services.router.events import decode_event, fallback_id, stream_sequence
from services.router.recorded_traces import RouteNote, route_note, trace_in_record
from services.router.selection import decide
from services.router.stores import RouterStores
from services.router.traces import encode_trace, kv_subject, trace_key
from services.router.unrouted import HeldForCatchUp
from shared.contracts.route import REPLAYABLE, RouteTrace
from shared.contracts.run import RunTarget
from shared.contracts.subjects import Subjects
from shared.errors import EnvelopeError
from shared.jetstream.consume_loop import (
    ACK,
    LEAVE,
    AtLeastOnceConsumer,
    BatchPolicy,
    ConsumerStats,
    Outcome,
    Poison,
    Retry,
    work_consumer,
)
from shared.jetstream.run_records import CREATE_ONLY, already_stored, run_record_subject
from shared.jetstream.streams import events_stream
from shared.lifecycle import Lifecycle, cancel_task
from shared.nats.ack_batch import AckBatch
from shared.nats.acked_publish import AckedPublisher
from shared.observability import tracing
from shared.observability.logs import get_logger
from shared.observability.trace_context import derived_ids
from shared.observability.tracing import messaging

log = get_logger("aurora.router")
STAGE = "router"


@dataclass(frozen=True)
class RouterConfig(BatchPolicy):
    durable: str = "router"
    max_ack_pending: int = 8192
    inline_limit: int = 256 * 1024
    instance: str = "router"
    # An event no binding took is routed again after one look at the bindings bucket shared by
    # every such event held meanwhile, at most one look this often (services/router/unrouted.py).
    catch_up_spacing: float = 0.02


@dataclass
class RouterStats(ConsumerStats):
    received: int = 0
    statuses: Counter[str] = field(default_factory=Counter)


def router_consumer(config: RouterConfig, subjects: Subjects) -> ConsumerConfig:
    return work_consumer(config.durable, "router: events to runs", subjects.events_all,
                         max_deliver=config.max_deliver, backoff=config.backoff,
                         max_ack_pending=config.max_ack_pending)


@dataclass(slots=True)
class _Work:
    msg: Msg
    key: str
    trace: bytes  # empty: no trace of its own (it is in the run record, or computed when asked)
    run: RunMessage | None = None
    invalid: str | None = None
    error: str | None = None
    missing: RunTarget | None = None  # processor_not_found: the target this router did not know
    status: str | None = None  # the route's status (None: an invalid event)
    held: bool = False  # matched no binding: settled after a look at the bindings (unrouted.py)
    bindings_seen: int = 0  # the revision of the copy of the bindings a held event was routed with


@dataclass(slots=True)
class _Batch:
    work: list[_Work]
    records: AckBatch[_Work]  # run records (the runs): one existing already is one stored
    pending: AckBatch[_Work]


class Router(Lifecycle[None]):
    """Consumes the events stream with a durable pull consumer shared by every router."""

    def __init__(self, nc: NATS, subjects: Subjects, catalog: RouteCatalog, stores: RouterStores,
                 config: RouterConfig | None = None,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC),
                 capabilities: Mapping[str, tuple[str, ...]] | None = None) -> None:
        super().__init__("the routing loop")
        self._js = nc.jetstream()
        # Runs, records and traces are published through it: acks decoded with msgspec in the read
        # loop, where nats-py's `publish_async` parsed each into a dataclass behind a queue.
        self._acks = AckedPublisher(nc)
        self._capabilities = capabilities or {}  # app id → the platform capabilities it declares
        self._subjects = subjects
        self._catalog = catalog
        self._stores = stores
        self._config = config or RouterConfig()
        self._clock = clock
        self.stats = RouterStats()
        self._consumer = AtLeastOnceConsumer(
            self._js, subjects, stream=events_stream(subjects).name,
            config=router_consumer(self._config, subjects), stage=STAGE,
            fetch_timeout=self._config.fetch_timeout, stats=self.stats,
        )
        self.unrouted = HeldForCatchUp(self._catalog.bindings_caught_up, self._settle_unrouted,
                                       spacing=self._config.catch_up_spacing)

    async def _start(self, parts: AsyncExitStack) -> None:
        parts.push_async_callback(self._acks.stop)
        await self._acks.start()
        parts.push_async_callback(self._consumer.stop)
        await self._consumer.start()
        looking = asyncio.create_task(self.unrouted.run(), name="router-unrouted")
        parts.push_async_callback(cancel_task, looking)

    async def run(self, stop: asyncio.Event) -> None:
        """Route until `stop`. While one batch waits for JetStream's acknowledgements, the next
        is fetched and published (at most two batches in flight)."""
        self.require_started()
        await self._consumer.run_batches(stop, self._begin_batch, batch=self._config.batch, in_flight=2)
        await self.unrouted.flush()  # the events no binding took, held for a look: settled before stopping

    async def _begin_batch(self, msgs: list[Msg]) -> Callable[[], Awaitable[Sequence[Outcome]]]:
        batch = await self._send(msgs)

        async def finish() -> Sequence[Outcome]:
            return await self._outcomes(batch)

        return finish

    async def _send(self, msgs: list[Msg]) -> _Batch:
        now = self._clock()
        at = now.isoformat(timespec="milliseconds")
        seen = self._catalog.bindings_revision
        work = await self._targets_read_through([self._route(msg, now, at) for msg in msgs], now, at)
        # Likewise a binding applied a moment ago, for events that matched none: held for the next
        # look at the bindings, one for every such event (unrouted.py); the batch goes on without them.
        unrouted = [item for item in work if item.status == "route_not_found"]
        for item in unrouted:
            item.held, item.bindings_seen = True, seen
        batch = await self._publish(work)
        self.unrouted.hold(unrouted)
        return batch

    async def _targets_read_through(self, work: list[_Work], now: datetime, at: str) -> list[_Work]:
        """`work` with the events routed to a target this router did not know routed again if the
        buckets hold it now (another service wrote it a moment ago; the watch has not brought it yet)."""
        missing = {item.missing for item in work if item.missing is not None}
        if missing and await self._catalog.read_through(missing):
            work = [self._reroute(item, now, at) if item.missing is not None else item for item in work]
        return work

    async def _settle_unrouted(self, items: list[_Work], _found: bool) -> None:
        """Route the held events again if the copy of the bindings is newer now than the one they
        were routed with (bindings the look found, or the watch brought meanwhile: either advances
        the copy's revision), then store and settle them as a batch's are."""
        now = self._clock()
        at = now.isoformat(timespec="milliseconds")
        # New items: the batch they came in still reads its own as held.
        if any(item.bindings_seen < self._catalog.bindings_revision for item in items):
            # a binding applied a moment ago may name a target applied with it
            work = await self._targets_read_through([self._reroute(item, now, at) for item in items], now, at)
        else:
            work = [replace(item, held=False) for item in items]
        outcomes = await self._outcomes(await self._publish(work))
        for item, outcome in zip(work, outcomes, strict=True):
            await self._consumer.settle(item.msg, outcome)

    async def _publish(self, work: list[_Work]) -> _Batch:
        """Store each item's run record and trace (the held ones later, after their look)."""
        for item in work:  # the rare path first, one by one
            if item.run is not None and item.run.offload is not None:  # a held item has no run yet
                await self._offload(item)
        publish = self._acks.send
        routes, records = self._stores.routes_bucket, self._stores.run_records_bucket
        timeout = self._config.publish_timeout
        batch = _Batch(work=work, records=AckBatch(timeout, success=already_stored), pending=AckBatch(timeout))
        for item in work:
            if item.error is not None or item.held:
                continue
            if item.run is not None:
                batch.records.add(item, await publish(run_record_subject(records, item.run.run_id), item.run.record,
                                                      headers=CREATE_ONLY))
            if item.trace:
                batch.pending.add(item, await publish(kv_subject(routes, item.key), item.trace))
        return batch

    async def _outcomes(self, batch: _Batch) -> list[Outcome]:
        """Every acknowledgement is awaited and each event's outcome decided (an event whose run
        record could not be stored comes again)."""
        for item, failure in await batch.records.settle():
            if failure is not None:
                item.error = f"storing the run record failed: {failure}"
        for item, failure in await batch.pending.settle():
            if item.error is None and failure is not None:
                item.error = f"publishing failed: {failure}"
        # An invalid event is dead-lettered once its trace is stored (the loop does it); one held
        # for a look at the bindings is settled after it (`_settle_unrouted`).
        return [LEAVE if item.held else Retry(item.error) if item.error is not None
                else Poison(item.invalid) if item.invalid is not None else ACK
                for item in batch.work]

    def _reroute(self, item: _Work, now: datetime, at: str) -> _Work:
        self.stats.received -= 1
        if item.status is not None:
            self.stats.statuses[item.status] -= 1
        return self._route(item.msg, now, at)

    def _route(self, msg: Msg, now: datetime, at: str) -> _Work:
        self.stats.received += 1
        raw = msg.data
        try:
            event = decode_event(raw)
        except EnvelopeError as exc:
            message_id = fallback_id(msg)
            reason = f"invalid event: {exc}"[:1000]
            self.stats.statuses["invalid_event"] += 1
            trace = RouteTrace(message_id=message_id, status="invalid_event", reason=reason, at=at,
                               router=self._config.instance)
            return _Work(msg=msg, key=trace_key(message_id), trace=encode_trace(trace), invalid=reason)
        # The span's id is derived from the event's, so an event routed again builds the very
        # same run message.
        traced = tracing.tracing_enabled()
        span_id = derived_ids(f"route:{event.header.message_id}")[1] if traced else None
        # With tracing off no attribute is built: the dicts and strings would be made for nothing, per event.
        with tracing.handling("process event", event.header.trace, span_id=span_id,
                              attributes=messaging("process", msg.subject, event.header.message_id) if traced
                              else None) as span:
            decision = decide(event, self._catalog.table, self._catalog, now=now)
            run: RunMessage | None = None
            route: RouteNote | None = None
            if decision.status == "dispatched":
                assert decision.target is not None and decision.binding_id is not None
                if trace_in_record(event.payload.type):  # else stored in KV (recorded_traces.py says why)
                    route = route_note(decision, event.payload.type, at, self._config.instance)
                run = build_run(
                    event, raw, binding_id=decision.binding_id, target=decision.target, timestamp=at,
                    router_instance=self._config.instance, inline_limit=self._config.inline_limit,
                    store_bucket=self._stores.run_events_bucket,
                    capabilities=self._capabilities.get(event.header.source.app, ()), trace=span.trace,
                    route=route,
                )
            if traced:
                span.update({"aurora.event.type": event.payload.type, "aurora.route.status": decision.status,
                             "aurora.binding.id": decision.binding_id,
                             "aurora.target": f"{decision.target.type}/{decision.target.id}" if decision.target
                             else None,
                             "aurora.run.id": run.run_id if run else None})
        self.stats.statuses[decision.status] += 1
        header, payload = event.header, event.payload
        missing = decision.target if decision.status == "processor_not_found" else None
        if route is not None or not trace_stored(decision.status, payload.type):
            return _Work(msg=msg, key="", trace=b"", run=run, status=decision.status)
        trace = RouteTrace(
            message_id=header.message_id, status=decision.status, binding_id=decision.binding_id,
            target=decision.target, run_id=run.run_id if run else None, steps=decision.steps,
            candidates=decision.candidates, reason=decision.reason, event_type=payload.type,
            source_app=header.source.app, synthetic=payload.synthetic, at=at, router=self._config.instance,
            event_seq=stream_sequence(msg) if decision.status in REPLAYABLE else None,
        )
        return _Work(msg=msg, key=trace_key(header.message_id), trace=encode_trace(trace), run=run, missing=missing,
                     status=decision.status)

    async def _offload(self, item: _Work) -> None:
        assert item.run is not None and item.run.offload is not None
        try:
            await self._stores.run_events.put(item.run.offload.name, item.msg.data)
        except Exception as exc:
            item.error = f"storing the large event failed: {exc}"
