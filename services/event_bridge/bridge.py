"""The bridge loop: pull signals, publish events, ack only what JetStream has stored.

Order of effects per signal: map → publish the event with `Nats-Msg-Id` = `message_id` →
wait for JetStream's ack → ack the signal. A crash anywhere redelivers the signal, the event
is published again under the same id and JetStream drops the copy, so nothing is lost or
doubled. A signal that cannot become an event is dead-lettered with its reason, then
terminated, so it is never redelivered forever.
"""

from __future__ import annotations

import asyncio
from contextlib import suppress
from dataclasses import dataclass, field

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, PubAck

from services.event_bridge.mapping import Rejected, map_signal, with_trace
from shared.contracts.envelope import EventEnvelope
from shared.contracts.signals import decode_signal
from shared.deadletter import dead_letter
from shared.logs import get_logger
from shared.streams import ensure_consumer, ensure_streams, fabric_streams, signals_stream
from shared.subjects import Subjects

log = get_logger("aurora.event_bridge")
STAGE = "event_bridge"
_encoder = msgspec.json.Encoder()


@dataclass(frozen=True)
class BridgeConfig:
    durable: str = "event-bridge"
    batch: int = 256
    fetch_timeout: float = 1.0
    publish_timeout: float = 10.0
    max_deliver: int = 10
    # Redelivery delays after a missed ack; the first is short so a crashed bridge's work is
    # picked up quickly, later ones give a struggling NATS room.
    backoff: tuple[float, ...] = (2.0, 5.0, 15.0, 30.0, 60.0)
    max_ack_pending: int = 4096


@dataclass
class BridgeStats:
    published: int = 0
    dead_lettered: int = 0
    retried: int = 0
    last_error: str | None = None
    extra: dict[str, int] = field(default_factory=dict)


class EventBridge:
    """Consumes the signal stream with a durable pull consumer shared by every bridge."""

    def __init__(self, nc: NATS, subjects: Subjects, config: BridgeConfig | None = None) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self._subjects = subjects
        self._config = config or BridgeConfig()
        self._signals_stream = signals_stream(subjects).name
        self.stats = BridgeStats()
        self._sub: JetStreamContext.PullSubscription | None = None

    async def start(self) -> None:
        cfg = self._config
        await ensure_streams(self._js, fabric_streams(self._subjects))
        await ensure_consumer(
            self._js,
            self._signals_stream,
            ConsumerConfig(
                durable_name=cfg.durable,
                description="event-bridge: signals to AMP events",
                deliver_policy=DeliverPolicy.ALL,
                ack_policy=AckPolicy.EXPLICIT,
                max_deliver=cfg.max_deliver,
                backoff=list(cfg.backoff),
                max_ack_pending=cfg.max_ack_pending,
                filter_subject=self._subjects.signals_all,
            ),
        )
        self._sub = await self._js.pull_subscribe_bind(cfg.durable, stream=self._signals_stream)

    async def run(self, stop: asyncio.Event) -> None:
        if self._sub is None:
            raise RuntimeError("EventBridge.run() called before start()")
        sub = self._sub
        try:
            while not stop.is_set():
                try:
                    msgs = await sub.fetch(self._config.batch, timeout=self._config.fetch_timeout)
                except (TimeoutError, NatsTimeoutError):
                    continue
                except Exception as exc:  # connection trouble: nats-py reconnects, we try again
                    self.stats.last_error = f"fetch: {exc}"
                    log.warning("fetch failed", error=str(exc))
                    await asyncio.sleep(0.5)
                    continue
                await self.process(msgs)
        finally:
            await self.stop()

    async def stop(self) -> None:
        """Let go of the pull subscription; idempotent.

        Unsubscribed here rather than left to `nc.drain()`: nats-py's drain waits until every
        message queued on a subscription is marked done, which `fetch()` never does for the
        status replies it leaves behind, so the process would hang on SIGTERM until the drain
        timeout. Whatever was fetched but not acked is redelivered after the ack wait.
        """
        sub, self._sub = self._sub, None
        if sub is not None:
            with suppress(Exception):
                await sub.unsubscribe()

    async def process(self, msgs: list[Msg]) -> None:
        pending: list[tuple[Msg, asyncio.Future[PubAck]]] = []
        for msg in msgs:
            try:
                outcome = self._convert(msg)
            except Exception as exc:
                # A signal that trips an unforeseen error would do so on every redelivery:
                # dead-letter it rather than crash, so it never becomes a crash loop.
                log.exception("signal could not be converted", subject=msg.subject)
                outcome = Rejected(f"could not convert the signal: {type(exc).__name__}: {exc}")
            if isinstance(outcome, Rejected):
                await self._reject(msg, outcome.reason)
                continue
            subject = self._subjects.event(outcome.header.source.app, outcome.payload.type)
            headers = {"Nats-Msg-Id": outcome.header.message_id}
            if outcome.header.trace is not None and outcome.header.trace.traceparent:
                headers["traceparent"] = outcome.header.trace.traceparent
            try:
                future = await self._js.publish_async(subject, _encoder.encode(outcome), headers=headers)
            except Exception as exc:
                await self._retry_later(msg, f"publishing the event failed: {_describe(exc)}")
                continue
            pending.append((msg, future))
        if not pending:
            return
        # One deadline for the whole batch: publishes lost with a dropped connection never get
        # an answer, and waiting for each in turn would stall the bridge for batch × timeout.
        await asyncio.wait([future for _, future in pending], timeout=self._config.publish_timeout)
        for msg, future in pending:
            if not future.done():
                future.cancel()
                error = f"no acknowledgement within {self._config.publish_timeout}s"
            elif future.cancelled():
                error = "cancelled"
            elif (failure := future.exception()) is not None:
                error = _describe(failure)
            else:
                await msg.ack()
                self.stats.published += 1
                continue
            await self._retry_later(msg, f"publishing the event failed: {error}")

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
        return event if isinstance(event, Rejected) else with_trace(event, msg.headers)

    async def _reject(self, msg: Msg, reason: str) -> None:
        meta = msg.metadata
        try:
            await dead_letter(
                self._js,
                self._subjects,
                stage=STAGE,
                data=msg.data,
                reason=reason,
                original_subject=msg.subject,
                stream=meta.stream,
                sequence=meta.sequence.stream,
            )
        except Exception as exc:
            await self._retry_later(msg, f"dead-lettering failed: {exc}", dead_letter_on_last=False)
            return
        await msg.term()
        self.stats.dead_lettered += 1
        log.info("signal dead-lettered", subject=msg.subject, reason=reason)

    async def _retry_later(self, msg: Msg, error: str, *, dead_letter_on_last: bool = True) -> None:
        self.stats.last_error = error
        self.stats.retried += 1
        delivered = msg.metadata.num_delivered
        if dead_letter_on_last and delivered >= self._config.max_deliver:
            await self._reject(msg, f"gave up after {delivered} deliveries: {error}")
            return
        log.warning("signal will be retried", subject=msg.subject, error=error, delivered=delivered)
        await msg.nak(delay=min(2.0 * delivered, 30.0))


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__

