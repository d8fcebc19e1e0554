"""The bridge loop: pull signals, publish events, ack only what JetStream has stored.

Three durables feed it: `event-bridge` on the signal stream, `event-bridge-tools` on the
audit stream, whose executed calls' records become `tool.*` events (`tool_events`), and
`event-bridge-tasks` on the tasks bucket, whose revisions' new transitions become `task.*`
events (`task_events`).

Order of effects per signal: map → publish the event with `Nats-Msg-Id` = `message_id` →
wait for JetStream's ack → ack the signal. A crash anywhere redelivers the signal, the event
is published again under the same id and JetStream drops the copy, so nothing is lost or
doubled. A signal that cannot become an event is dead-lettered with its reason, then
terminated, so it is never redelivered forever.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from services.event_bridge.mapping import Rejected, map_signal, parent_trace, with_trace
from services.event_bridge.task_events import TASK_EVENTS_DURABLE, Events, TaskEventMaker
from services.event_bridge.tool_events import TOOL_EVENTS_DURABLE, tool_event
from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.envelope import EventEnvelope
from shared.contracts.signals import decode_signal
from shared.contracts.subjects import Subjects
from shared.jetstream.consume_loop import (
    ACK,
    AtLeastOnceConsumer,
    BatchHandler,
    BatchPolicy,
    ConsumerStats,
    Outcome,
    Poison,
    Retry,
    work_consumer,
)
from shared.jetstream.streams import (
    audit_stream,
    ensure_streams,
    events_stream,
    fabric_streams,
    signals_stream,
    tasks_bucket,
)
from shared.lifecycle import Lifecycle
from shared.nats.ack_batch import AckBatch, describe
from shared.nats.acked_publish import AckedPublisher
from shared.observability import tracing
from shared.observability.logs import get_logger
from shared.observability.trace_context import derived_ids
from shared.observability.tracing import messaging
from shared.streak import FailureStreak

log = get_logger("aurora.event_bridge")
STAGE = "event_bridge"
TASKS_BUCKET_WAIT = 1.0  # seconds between looks for the tasks bucket, until a runner has made it
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class BridgeConfig(BatchPolicy):
    durable: str = "event-bridge"


@dataclass
class BridgeStats(ConsumerStats):
    published: int = 0
    extra: dict[str, int] = field(default_factory=dict)


def bridge_consumer(config: BridgeConfig, subjects: Subjects) -> ConsumerConfig:
    return work_consumer(config.durable, "event-bridge: signals to AMP events", subjects.signals_all,
                         max_deliver=config.max_deliver, backoff=config.backoff,
                         max_ack_pending=config.max_ack_pending)


Convert = Callable[[Msg], "EventEnvelope | Events | Rejected | None"]  # None: nothing to publish, just ack


def tool_events_consumer(config: BridgeConfig, subjects: Subjects) -> ConsumerConfig:
    return work_consumer(TOOL_EVENTS_DURABLE, "event-bridge: executed calls' audit records to tool.* events",
                         subjects.audit_all, max_deliver=config.max_deliver, backoff=config.backoff,
                         max_ack_pending=config.max_ack_pending)


def task_events_consumer(config: BridgeConfig, subjects: Subjects, *, since: datetime) -> ConsumerConfig:
    """The tasks bucket's revisions from `since`: on first creation, the events stream's duplicate
    window before now (`first_since`), then that same time for good (a create-or-update with the
    same start changes nothing, and the durable resumes where it was acked).

    Not from the bucket's start: it holds up to 30 days of tasks whose events the runner once
    signalled itself, far outside the duplicate window, and each would be stored as an event a
    second time. Not only new revisions either: a bridge started after a fresh runner (it waits
    for the bucket, `TASKS_BUCKET_WAIT`) would miss the transitions written meanwhile. Revisions
    of the window before are turned into events again and JetStream drops those already stored
    (same `Nats-Msg-Id`); older ones are not replayed."""
    consumer = work_consumer(TASK_EVENTS_DURABLE, "event-bridge: tasks' transitions to task.* events",
                             f"$KV.{tasks_bucket(subjects).name}.>", max_deliver=config.max_deliver,
                             backoff=config.backoff, max_ack_pending=config.max_ack_pending)
    return consumer.evolve(deliver_policy=DeliverPolicy.BY_START_TIME, opt_start_time=since)


def first_since(subjects: Subjects, now: datetime | None = None) -> datetime:
    """Where a new `event-bridge-tasks` starts: the events stream's duplicate window ago, to the
    second (the server is given back exactly what it stored)."""
    now = now or datetime.now(UTC)
    return (now - timedelta(seconds=events_stream(subjects).duplicate_window)).replace(microsecond=0)


class EventBridge(Lifecycle[None]):
    """Consumes the signal stream, the audit stream for `tool.*` events and the tasks bucket for
    `task.*` events, each with a durable pull consumer shared by every bridge."""

    def __init__(self, nc: NATS, subjects: Subjects, config: BridgeConfig | None = None, *,
                 plan: StreamPlan = DEFAULT_PLAN) -> None:
        super().__init__("the event bridge")
        self._js = nc.jetstream()
        self._plan = plan
        # Events are published through it: acks decoded with msgspec in the read loop, and a
        # stream's refusal reported as the server's error (nats-py's `publish_async` never
        # completes a refused publish; see docs/design.md).
        self._acks = AckedPublisher(nc)
        self._subjects = subjects
        self._config = config or BridgeConfig()
        self.stats = BridgeStats()
        self._consumer = AtLeastOnceConsumer(
            self._js, subjects, stream=signals_stream(subjects).name,
            config=bridge_consumer(self._config, subjects), stage=STAGE,
            fetch_timeout=self._config.fetch_timeout, stats=self.stats,
        )
        self._tools = AtLeastOnceConsumer(
            self._js, subjects, stream=audit_stream(subjects).name,
            config=tool_events_consumer(self._config, subjects),
            stage=STAGE, fetch_timeout=self._config.fetch_timeout, stats=self.stats,
        )
        self._tasks_stream = f"KV_{tasks_bucket(subjects).name}"
        self._task_events = TaskEventMaker(duplicate_window=events_stream(subjects).duplicate_window)
        self._tasks: AtLeastOnceConsumer | None = None  # made in `run`, once the tasks bucket exists

    async def _start(self, parts: AsyncExitStack) -> None:
        await ensure_streams(self._js, [*fabric_streams(self._subjects), audit_stream(self._subjects)], plan=self._plan)
        parts.push_async_callback(self._acks.stop)
        await self._acks.start()
        for consumer in (self._consumer, self._tools):
            parts.push_async_callback(consumer.stop)
            await consumer.start()
        parts.push_async_callback(self._stop_tasks)

    async def run(self, stop: asyncio.Event) -> None:
        """Bridge until `stop`, one batch at a time: publish it, wait once for JetStream's acks,
        settle it, fetch the next. What was fetched but not acked when `stop()` follows is
        redelivered after the ack wait."""
        self.require_started()
        batch = self._config.batch
        await asyncio.gather(
            self._consumer.run_batches(stop, self._starter(self._convert), batch=batch, in_flight=1),
            self._tools.run_batches(stop, self._starter(tool_event), batch=batch, in_flight=1),
            self._run_tasks(stop),
        )

    async def _run_tasks(self, stop: asyncio.Event) -> None:
        """`task.*` events, once the tasks bucket exists: the runners create it, and the bridge
        may only read its stream's info (deploy/nats-auth.conf), so a bridge started first waits.
        A server that does not answer meanwhile is said as a streak; signals and audit go on."""
        looking = FailureStreak(log, "looking for the tasks bucket", consumer=TASK_EVENTS_DURABLE)
        while self._tasks is None and not stop.is_set():
            try:
                await self._js.stream_info(self._tasks_stream)
                tasks = await self._tasks_consumer()
                await tasks.start()
                self._tasks = tasks
                looking.worked()
                break
            except NotFoundError:
                pass  # no runner has made it yet
            except Exception as exc:
                looking.failed(exc)
            with suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), TASKS_BUCKET_WAIT)
        if self._tasks is not None and not stop.is_set():
            await self._tasks.run_batches(stop, self._starter(self._task_events.convert), batch=self._config.batch,
                                          in_flight=1)

    async def _tasks_consumer(self) -> AtLeastOnceConsumer:
        try:  # the start a durable was created with stays its start
            since = (await self._js.consumer_info(self._tasks_stream, TASK_EVENTS_DURABLE)).config.opt_start_time
        except NotFoundError:
            since = None
        config = task_events_consumer(self._config, self._subjects, since=since or first_since(self._subjects))
        return AtLeastOnceConsumer(self._js, self._subjects, stream=self._tasks_stream, config=config, stage=STAGE,
                                   fetch_timeout=self._config.fetch_timeout, stats=self.stats)

    async def _stop_tasks(self) -> None:
        if self._tasks is not None:
            await self._tasks.stop()

    async def health(self, _: dict[str, Any]) -> dict[str, Any]:
        """`<prefix>.admin.event_bridge.health`: what this bridge has done so far."""
        stats = self.stats
        return {"status": "ok", "published": stats.published, "dead_lettered": stats.dead_lettered,
                "retried": stats.retried, "last_error": stats.last_error}

    async def process(self, msgs: list[Msg]) -> None:
        """Bridge one batch of signals to the end: publish, wait for the acknowledgements, settle."""
        await self._consumer.finish(msgs, await self._starter(self._convert)(msgs))

    def _starter(self, convert: Convert) -> BatchHandler:
        async def start(msgs: list[Msg]) -> Callable[[], Awaitable[Sequence[Outcome]]]:
            return await self._publish_batch(msgs, convert)

        return start

    async def _publish_batch(self, msgs: list[Msg], convert: Convert) -> Callable[[], Awaitable[Sequence[Outcome]]]:
        """Publish every event of the batch without waiting; what is returned waits once."""
        outcomes: list[Outcome] = []
        acks: AckBatch[int] = AckBatch(self._config.publish_timeout)  # by the index of their message
        when_stored: dict[int, Callable[[], None]] = {}  # by the index of their message
        for msg in msgs:
            try:
                outcome = convert(msg)
            except Exception as exc:
                # A message that trips an unforeseen error would do so on every redelivery:
                # dead-letter it rather than crash, so it never becomes a crash loop.
                log.exception("message could not be converted", subject=msg.subject)
                outcome = Rejected(f"could not convert the message: {type(exc).__name__}: {exc}")
            if outcome is None:
                outcomes.append(ACK)
                continue
            if isinstance(outcome, Rejected):
                outcomes.append(Poison(outcome.reason))
                continue
            events = outcome.events if isinstance(outcome, Events) else (outcome,)
            index = len(outcomes)
            outcomes.append(ACK)
            for event in events:
                subject = self._subjects.event(event.header.source.app, event.payload.type)
                try:
                    future = await self._publish(msg, event, subject)
                except Exception as exc:
                    outcomes[index] = Retry(f"publishing the event failed: {describe(exc)}")
                    break
                acks.add(index, future)
            if isinstance(outcome, Events):
                when_stored[index] = outcome.stored

        async def finish() -> Sequence[Outcome]:
            for index, failure in await acks.settle():
                if failure is None:
                    self.stats.published += 1
                else:
                    outcomes[index] = Retry(f"publishing the event failed: {failure}")
            for index, stored in when_stored.items():
                if outcomes[index] is ACK:  # every event of that message stored
                    stored()
            return outcomes

        return finish

    async def _publish(self, msg: Msg, event: EventEnvelope, subject: str) -> asyncio.Future[int]:
        """Publish the event inside the bridge's span for it, whose ids are derived from the
        message id so that a redelivered signal becomes the very same bytes again."""
        parent = parent_trace(event, msg.headers)
        trace_id, span_id = derived_ids(event.header.message_id) if tracing.tracing_enabled() else (None, None)
        with tracing.handling("process signal", parent, span_id=span_id,
                              trace_id=None if parent is not None else trace_id,
                              attributes=messaging("process", msg.subject, event.header.message_id)) as span:
            event = with_trace(event, msg.headers, span.trace)
            span.set("aurora.event.type", event.payload.type)
            headers = {"Nats-Msg-Id": event.header.message_id}
            if event.header.trace is not None and event.header.trace.traceparent:
                headers["traceparent"] = event.header.trace.traceparent
            return await self._acks.send(subject, _encoder.encode(event), headers=headers)

    def _convert(self, msg: Msg) -> EventEnvelope | Rejected:
        parts = msg.subject.split(".")
        if len(parts) != 4:
            return Rejected(f"signal subject {msg.subject!r} is not <prefix>.sig.<app>.<kind>")
        try:
            signal = decode_signal(msg.data)
        except (msgspec.DecodeError, RecursionError) as exc:  # RecursionError: nesting too deep
            return Rejected(f"malformed signal: {exc}")
        if parts[3] != type(signal).__struct_config__.tag:
            return Rejected(f"signal kind {type(signal).__struct_config__.tag!r} arrived on {msg.subject!r}")
        event = map_signal(signal, subject_app_token=parts[2])
        return event
