"""The pull loop: one durable consumer on the runs (the run records that are runs), shared by
every runner process; a second one drains an AMP_RUNS left by an older deployment.

Each process runs at most `concurrency` runs at once and fetches only as many runs as it has
free slots, so a busy runner leaves the queue to the others; `max_ack_pending` on the consumer
caps the runs in flight across all of them. While a run works, `in_progress` keeps its message
from being redelivered. On stop: fetch nothing more, let runs finish for `finish_grace`, then ask
the rest to hand back at their next step (nak: another runner continues from the step log), and
after `stop_timeout` abandon whatever is left (its message returns after the ack wait).
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from dataclasses import dataclass, field

import msgspec
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from services.runner.config import RunnerConfig
from services.runner.executor import Decision, InvalidRun, RetryLater, TaskExecutor
from services.runner.stores import legacy_runs_consumer, runs_consumer
from shared.contracts.run import decode_recorded_run
from shared.contracts.subjects import Subjects
from shared.jetstream.consume_loop import (
    ACK,
    HAND_BACK,
    LEAVE,
    TERM,
    AtLeastOnceConsumer,
    ConsumerStats,
    Outcome,
    Poison,
    Retry,
)
from shared.lifecycle import Lifecycle
from shared.nats.bus import nats_away
from shared.observability import tracing
from shared.observability.logs import get_logger
from shared.observability.tracing import messaging

log = get_logger("aurora.runner.worker")
STAGE = "runner"
_OUTCOMES: dict[str, Outcome] = {"ack": ACK, "nak": HAND_BACK, "term": TERM, "drop": LEAVE,
                                     "retry": Retry("")}  # the executor said why in the task and its log


_encoder = msgspec.json.Encoder()


def run_in_record(data: bytes) -> bytes:
    """The run a run record holds, as the executor reads a run (the form AMP_RUNS carried)."""
    if not data:
        raise InvalidRun("a deleted run record (no run in it)")
    try:
        return _encoder.encode(decode_recorded_run(data))
    except msgspec.DecodeError as exc:  # ValidationError too, and nesting too deep
        raise InvalidRun(f"not a run record: {exc}") from exc


@dataclass
class WorkerStats(ConsumerStats):
    received: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    errors: int = 0

    def count(self, verdict: str) -> None:
        self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1


class Worker(Lifecycle[None]):
    def __init__(self, js: JetStreamContext, subjects: Subjects, executor: TaskExecutor, config: RunnerConfig,
                 stream: str, *, legacy: bool = False) -> None:
        """`legacy`: the worker drains AMP_RUNS (runs as messages of their own), not the run records."""
        super().__init__("the AMP_RUNS worker" if legacy else "the runs worker")
        self._executor = executor
        self._config = config
        self._legacy = legacy
        self._stopping = asyncio.Event()
        self.stats = WorkerStats()
        consumer = legacy_runs_consumer(config, subjects) if legacy else runs_consumer(config, subjects)
        self._consumer = AtLeastOnceConsumer(js, subjects, stream=stream, config=consumer,
                                             stage=STAGE, heartbeat=config.heartbeat, stats=self.stats)

    @property
    def in_flight(self) -> int:
        return len(self._consumer.running)

    async def _start(self, parts: AsyncExitStack) -> None:
        parts.push_async_callback(self._consumer.stop)
        await self._consumer.start()

    async def run(self, stop: asyncio.Event) -> None:
        self.require_started()
        await self._consumer.run_each(stop, self._handle, concurrency=self._config.concurrency)
        await self._drain()

    async def _drain(self) -> None:
        running = self._consumer.running
        if not running:
            return
        log.info("stopping: letting runs finish", in_flight=len(running))
        await asyncio.wait(set(running), timeout=self._config.finish_grace)
        if running:
            log.info("stopping: handing runs back", in_flight=len(running))
            self._stopping.set()
            left = max(self._config.stop_timeout - self._config.finish_grace, 0.1)
            await asyncio.wait(set(running), timeout=left)
        for task in list(running):
            task.cancel()
        if running:
            await asyncio.gather(*running, return_exceptions=True)

    async def _handle(self, msg: Msg) -> Outcome:
        self.stats.received += 1
        with tracing.handling("process run", tracing.envelope_trace(msg.data),
                              attributes=messaging("process", msg.subject, msg.header.get("Nats-Msg-Id")
                                                   if msg.header else None)) as span:
            outcome = await self._execute(msg)
            if outcome is not ACK:
                span.set("aurora.run.outcome", outcome.kind)
            return outcome

    async def _execute(self, msg: Msg) -> Outcome:
        verdict: Decision = "retry"
        try:
            data = msg.data if self._legacy else run_in_record(msg.data)
            verdict = await self._executor.handle_run(data, deliveries=msg.metadata.num_delivered,
                                                      stopping=self._stopping)
        except InvalidRun as exc:
            self.stats.count("term")
            return Poison(str(exc))  # retrying cannot make it readable
        except asyncio.CancelledError:
            self.stats.count("drop")  # abandoned at shutdown: the message comes back after the ack wait
            raise
        except Exception as exc:
            self.stats.errors += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            self.stats.count("retry")
            if nats_away(exc):  # a fault of the moment, not of the run: said by the loop, with the others
                return Retry(f"NATS away: {self.stats.last_error}")
            log.exception("run failed unexpectedly; it will be retried", subject=msg.subject,
                          delivered=msg.metadata.num_delivered)
            return Retry(self.stats.last_error, said=True)  # the consumer's own line would say it again
        if isinstance(verdict, RetryLater):  # the task waits for an unavailable target (see the task)
            self.stats.count("wait")
            return Retry("", delay=verdict.delay)
        self.stats.count(verdict)
        return _OUTCOMES[verdict]
