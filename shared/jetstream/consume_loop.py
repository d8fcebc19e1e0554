# Over 300 lines: the one at-least-once loop every service uses; fetch, handle, settle and retry read together.
"""The one at-least-once consumer loop every service uses, with one retry and dead-letter policy.

A service hands the loop its durable's config and a handler; the loop creates the durable
(through the name-scoped API, see `shared.jetstream.consumers`), fetches, calls the handler and settles
each message by the `Outcome` the handler returns:

- `ACK` / `TERM`: done (`TERM` also tells JetStream never to deliver it again);
- `Retry(reason)`: nak with `backoff(delivered)` (or the handler's own `delay`); when the message
  has had its last delivery (`max_deliver`), it is dead-lettered with the reason instead, so
  nothing is dropped silently;
- `HAND_BACK`: nak at once (a runner stopping gives its run to another), same last-delivery rule;
- `Poison(reason)`: it can never be processed: dead-lettered to `AMP_DLQ` with the reason, then
  terminated. A dead letter that cannot be published is retried later, never terminated;
- `LEAVE`: nothing (abandoned at shutdown; it comes back after the ack wait).

A loop's `stop` ends the fetch waiting at once (`Puller.interrupt`); what the server delivered
that no fetch handed out is handed back when the consumer stops, for another instance to take.

Two shapes of work: `run_batches` for the hot paths (the bridge and the router publish a whole
batch, then wait once for JetStream's acks; `pipeline=2` lets the next batch be published while
the last one settles) and `run_each` for slow work (one task per message, at most `concurrency`
at once, each kept alive with `in_progress`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass
from functools import partial

from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from shared.contracts.subjects import Subjects
from shared.jetstream.consumers import ensure_durable
from shared.jetstream.deadletter import dead_letter
from shared.jetstream.pulls import Puller
from shared.jetstream.unsaid_retries import UnsaidRetries
from shared.later_task import LaterTask
from shared.lifecycle import Lifecycle, unsubscribe
from shared.nats.bus import nats_away
from shared.observability import metrics
from shared.observability.logs import get_logger
from shared.streak import FailureStreak

log = get_logger("aurora.consumer")
FETCH_RETRY_PAUSE = 0.5  # after a fetch that failed (not one that timed out with nothing to fetch)


@dataclass(frozen=True, slots=True)
class Outcome:
    kind: str  # ack | term | retry | hand_back | poison | leave
    reason: str = ""
    delay: float | None = None  # retry: seconds before it comes again, when the handler knows better
    said: bool = False  # retry: the handler logged why already (a traceback): the loop adds no line


ACK = Outcome("ack")
TERM = Outcome("term")
HAND_BACK = Outcome("hand_back")
LEAVE = Outcome("leave")


def Retry(reason: str, delay: float | None = None, *, said: bool = False) -> Outcome:
    return Outcome("retry", reason, delay, said)


def Poison(reason: str) -> Outcome:
    return Outcome("poison", reason)


def backoff(delivered: int) -> float:
    """Seconds before a message that failed on its `delivered`-th delivery comes again."""
    return min(2.0 * delivered, 30.0)


def exhausted(delivered: int, max_deliver: int) -> bool:
    """This delivery was the last JetStream will make (`max_deliver` ≤ 0: unlimited)."""
    return max_deliver > 0 and delivered >= max_deliver


@dataclass(frozen=True)
class BatchPolicy:
    """How a hot-path stage (the bridge, the router) consumes its stream: batches of `batch`
    messages, each batch's publishes acknowledged within `publish_timeout`, a message
    redelivered after the `backoff` delays at most `max_deliver` times, then dead-lettered."""

    durable: str = ""
    batch: int = 256
    fetch_timeout: float = 1.0
    publish_timeout: float = 10.0
    max_deliver: int = 10
    # The first redelivery is soon, so a crashed process's work is picked up quickly; later
    # ones give a struggling NATS room.
    backoff: tuple[float, ...] = (2.0, 5.0, 15.0, 30.0, 60.0)
    max_ack_pending: int = 4096


def work_consumer(durable: str, description: str, filter_subject: str, *, max_deliver: int,
                  max_ack_pending: int, backoff: Sequence[float] | None = None,
                  ack_wait: float | None = None) -> ConsumerConfig:
    """A durable pull consumer shared by every instance of a stage: all of the stream from the
    start, each message acknowledged explicitly."""
    return ConsumerConfig(
        durable_name=durable,
        description=description,
        deliver_policy=DeliverPolicy.ALL,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=ack_wait,
        max_deliver=max_deliver,
        backoff=list(backoff) if backoff else None,
        max_ack_pending=max_ack_pending,
        filter_subject=filter_subject,
    )


@dataclass
class ConsumerStats:
    settled: int = 0
    retried: int = 0
    dead_lettered: int = 0
    last_error: str | None = None


BatchHandler = Callable[[list[Msg]], Awaitable[Callable[[], Awaitable[Sequence[Outcome]]]]]
"""Starts a batch (e.g. publishes its results) and returns what finishes it: a coroutine
function giving one outcome per message, in order."""

MessageHandler = Callable[[Msg], Awaitable[Outcome]]


class AtLeastOnceConsumer(Lifecycle[JetStreamContext.PullSubscription]):
    """A durable pull consumer on `stream`, dead-lettering to `<prefix>.dlq.<stage>`; started, it
    holds its pull subscription."""

    def __init__(self, js: JetStreamContext, subjects: Subjects, *, stream: str, config: ConsumerConfig,
                 stage: str, fetch_timeout: float = 1.0, heartbeat: float | None = None,
                 stats: ConsumerStats | None = None) -> None:
        assert config.durable_name, "an at-least-once consumer is durable"
        super().__init__(f"consumer {config.durable_name}")
        self._js = js
        self._subjects = subjects
        self._stream = stream
        self._config = config
        self._stage = stage
        self._fetch_timeout = fetch_timeout
        self._heartbeat = heartbeat
        self._max_deliver = config.max_deliver or -1
        self.running: set[asyncio.Task[None]] = set()
        self.stats = stats if stats is not None else ConsumerStats()
        self._fetching = FailureStreak(log, "fetch", consumer=self.durable)
        self._unsaid = UnsaidRetries(self.durable)
        self._looping = False  # a loop is fetching, and will say what is held back
        self._puller: Puller | None = None  # set while started: fetches from the pull subscription

    @property
    def durable(self) -> str:
        return str(self._config.durable_name)

    async def _start(self, parts: AsyncExitStack) -> JetStreamContext.PullSubscription:
        await ensure_durable(self._js, self._stream, self._config)
        sub = await self._js.pull_subscribe_bind(self.durable, stream=self._stream)
        # What was delivered and never started is handed back once nothing more can come (after the
        # unsubscribe below): another instance has it at once, not after the ack wait.
        parts.push_async_callback(self._hand_back_delivered)
        # Unsubscribed at stop rather than left to `nc.drain()`, which waits for status replies
        # `fetch()` never marks done.
        parts.push_async_callback(unsubscribe, sub)
        self._puller = Puller(sub)
        return sub

    def _interrupter(self, stop: asyncio.Event) -> asyncio.Task[None]:
        self.require_started()
        assert self._puller is not None
        return self._puller.interrupt_on(stop, name=f"{self.durable}-interrupt")

    async def _hand_back_delivered(self) -> None:
        if self._puller is not None:
            for msg in self._puller.delivered():
                await self.settle(msg, HAND_BACK)

    async def _fetch(self, batch: int) -> list[Msg]:
        self.require_started()
        assert self._puller is not None
        try:
            msgs = await self._puller.fetch(batch, self._fetch_timeout)
        except (TimeoutError, NatsTimeoutError):
            msgs = []
        except Exception as exc:  # connection trouble: nats-py reconnects, we try again
            self.stats.last_error = f"fetch: {exc}"
            self._fetching.failed(exc)
            await asyncio.sleep(FETCH_RETRY_PAUSE)
            return []
        self._fetching.worked()
        return msgs

    async def run_batches(self, stop: asyncio.Event, handle: BatchHandler, *, batch: int,
                          in_flight: int = 2) -> None:
        """Until `stop`: fetch up to `batch` and start it; it finishes and settles in the
        background while the next batches are fetched and started, at most `in_flight` at once
        (1: each batch is settled before the next fetch)."""
        settling: list[asyncio.Task[None]] = []
        self._looping = True
        interrupter = self._interrupter(stop)
        try:
            while not stop.is_set():
                msgs = await self._fetch(batch)
                if not msgs:
                    self._unsaid.say(when_due=True)  # held back, and nothing more came: said now
                    continue
                finish = await handle(msgs)
                settling.append(asyncio.create_task(self.finish(msgs, finish), name=f"{self.durable}-settle"))
                while len(settling) >= in_flight:
                    await settling.pop(0)
        finally:
            interrupter.cancel()
            self._looping = False
            for task in settling:
                await task
            self._unsaid.say()  # what the last interval left unsaid

    async def finish(self, msgs: list[Msg], finish: Callable[[], Awaitable[Sequence[Outcome]]]) -> None:
        """Wait for a started batch's outcomes and settle each message. Messages retried are said
        by reason, at most every `RETRIES_SAID_EVERY` seconds (`UnsaidRetries`): while a stream
        leader was away, each failed batch of publishes logged a warning per message."""
        outcomes = await finish()
        for msg, outcome in zip(msgs, outcomes, strict=True):
            if outcome is not LEAVE:  # the handler settles it later, or it comes back after the ack wait
                await self.settle(msg, outcome)
        self._unsaid.say(when_due=self._looping)  # at once when no loop is left to say it later

    async def run_each(self, stop: asyncio.Event, handle: MessageHandler, *, concurrency: int) -> None:
        """Until `stop`: keep at most `concurrency` messages in work, one task each; fetch only as
        many as there are free slots, so a busy process leaves the rest to others. Messages
        retried are said by reason at most every `RETRIES_SAID_EVERY` seconds, as batches' are:
        while NATS was away, each run in flight had a line of its own."""
        self._looping = True
        interrupter = self._interrupter(stop)
        try:
            while not stop.is_set():
                free = concurrency - len(self.running)
                if free <= 0:
                    await asyncio.wait(self.running, timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
                    continue
                msgs = await self._fetch(free)
                if not msgs:
                    self._unsaid.say(when_due=True)  # held back, and nothing more came: said now
                for msg in msgs:
                    task = asyncio.create_task(self._one(msg, handle),
                                               name=f"{self.durable}-{msg.metadata.sequence.stream}")
                    self.running.add(task)
                    task.add_done_callback(self.running.discard)
        finally:
            interrupter.cancel()
            self._looping = False
            self._unsaid.say()  # what the last interval left unsaid

    async def handle_delivered(self, handle: MessageHandler, timeout: float) -> int:
        """When stopping, after `run_each`: let the messages in work finish, then handle, one by
        one, what the server already delivered to this process's pull subscription and no fetch
        handed out yet (a pull answered as it expired leaves its messages there for the next
        fetch); they would otherwise wait out the ack wait before another instance may have them.
        At most `timeout` seconds (what is left comes back after the ack wait). Returns how many
        delivered messages were handled."""
        if self.running:
            await asyncio.wait(self.running, timeout=timeout)
        puller = self._puller if self.started else None
        handled = 0
        with suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                while puller is not None and (delivered := puller.delivered()):
                    for msg in delivered:
                        await self._one(msg, handle)
                        handled += 1
        return handled

    async def _one(self, msg: Msg, handle: MessageHandler) -> None:
        beat = (LaterTask(self._heartbeat, partial(_keep_in_progress, msg, self._heartbeat), name="in-progress")
                if self._heartbeat else None)
        outcome = LEAVE
        try:
            outcome = await handle(msg)
        except asyncio.CancelledError:
            raise  # abandoned: LEAVE, the message comes back after the ack wait
        except Exception as exc:
            away = nats_away(exc)  # NATS is away: said with the others retried, no traceback each
            if not away:
                log.exception("handling failed; the message will come again", consumer=self.durable,
                              subject=msg.subject, delivered=msg.metadata.num_delivered)
            outcome = Retry(f"{type(exc).__name__}: {exc}", said=not away)
        finally:
            if beat is not None:
                beat.cancel()
            if outcome is not LEAVE:
                await self.settle(msg, outcome)
                self._unsaid.say(when_due=self._looping)  # at once when no loop is left to say it later

    async def settle(self, msg: Msg, outcome: Outcome) -> None:
        """Apply the one policy; never raises (a message not settled comes back after the ack wait).
        A message retried is held to be said with others (`UnsaidRetries`), unless its handler
        said it already."""
        try:
            await self._settle(msg, outcome)
        except Exception as exc:
            log.warning("could not settle a message", consumer=self.durable, outcome=outcome.kind, error=str(exc))

    async def _settle(self, msg: Msg, outcome: Outcome) -> None:
        kind = outcome.kind
        self.stats.settled += 1
        metrics.consumer_lag.set(msg.metadata.num_pending or 0, stage=self._stage, consumer=self.durable)
        if kind == "ack":
            await msg.ack()
            self._count("acked")
        elif kind == "term":
            await msg.term()
            self._count("terminated")
        elif kind == "poison":
            await self._dead_letter(msg, outcome.reason)
        elif kind in ("retry", "hand_back"):
            self.stats.retried += 1
            if kind == "retry" and outcome.reason:
                self.stats.last_error = outcome.reason
            delivered = msg.metadata.num_delivered
            if exhausted(delivered, self._max_deliver):
                await self._dead_letter(msg, f"gave up after {delivered} deliveries: {outcome.reason or kind}")
            elif kind == "hand_back":
                await msg.nak()
                self._count("handed_back")
            else:
                self._count("retried")
                if not outcome.said:
                    self._unsaid.add(outcome.reason, msg.subject)
                await msg.nak(delay=outcome.delay if outcome.delay is not None else backoff(delivered))

    def _count(self, outcome: str) -> None:
        metrics.stage_messages.add(1, {"stage": self._stage, "outcome": outcome})

    async def _dead_letter(self, msg: Msg, reason: str) -> None:
        meta = msg.metadata
        try:
            # Written before the term: on a work-queue stream the term removes the original, so
            # the advisory listener could not fetch it afterwards.
            stored = await dead_letter(self._js, self._subjects, stage=self._stage, data=msg.data, reason=reason,
                                       original_subject=msg.subject, stream=meta.stream,
                                       sequence=meta.sequence.stream, headers=msg.headers,
                                       deliveries=meta.num_delivered, consumer=self.durable)
        except Exception as exc:
            # Never terminate what is not stored elsewhere: try again later.
            self.stats.last_error = f"dead-lettering failed: {exc}"
            log.warning("dead-lettering failed; the message will come again", consumer=self.durable,
                        subject=msg.subject, error=str(exc))
            await msg.nak(delay=backoff(meta.num_delivered))
            return
        await msg.term()
        if stored:  # a message dead-lettered before (its term was lost) is not counted twice
            self.stats.dead_lettered += 1
            self._count("dead_lettered")
        log.info("message dead-lettered", consumer=self.durable, subject=msg.subject, reason=reason)


async def _keep_in_progress(msg: Msg, every: float) -> None:
    """Tell JetStream the message is still being worked on now and every `every` seconds, until
    cancelled: long work keeps its message without a shorter ack wait. Started `every` seconds
    into the work (`LaterTask`): most work ends sooner and never needs it."""
    while True:
        try:
            await msg.in_progress()
        except Exception as exc:
            log.warning("heartbeat failed", subject=msg.subject, error=str(exc))
        await asyncio.sleep(every)
