"""The pull loop: one durable consumer on the runs queue, shared by every runner process.

Each process runs at most `concurrency` runs at once and fetches only as many runs as it has
free slots, so a busy runner leaves the queue to the others; `max_ack_pending` on the consumer
caps the runs in flight across all of them. While a run works, `in_progress` keeps its message
from being redelivered. On stop: fetch nothing more, let runs finish for `finish_grace`, then ask
the rest to hand back at their next step (nak: another runner continues from the step log), and
after `stop_timeout` abandon whatever is left (its message returns after the ack wait).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from nats.aio.msg import Msg
from nats.js import JetStreamContext

from services.runner.config import RunnerConfig
from services.runner.executor import InvalidRun, TaskExecutor, Verdict
from services.runner.pulling import keep_in_progress, pull_into_tasks
from shared.deadletter import dead_letter
from shared.logs import get_logger
from shared.subjects import Subjects

log = get_logger("aurora.runner.worker")
STAGE = "runner"


@dataclass
class WorkerStats:
    received: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)
    errors: int = 0
    dead_lettered: int = 0
    last_error: str | None = None

    def count(self, verdict: str) -> None:
        self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1


class Worker:
    def __init__(self, js: JetStreamContext, subjects: Subjects, executor: TaskExecutor, config: RunnerConfig,
                 stream: str) -> None:
        self._js = js
        self._subjects = subjects
        self._executor = executor
        self._config = config
        self._stream = stream
        self._sub: JetStreamContext.PullSubscription | None = None
        self._running: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()
        self.stats = WorkerStats()

    @property
    def in_flight(self) -> int:
        return len(self._running)

    async def start(self) -> None:
        if self._sub is None:
            self._sub = await self._js.pull_subscribe_bind(self._config.durable, stream=self._stream)

    async def run(self, stop: asyncio.Event) -> None:
        if self._sub is None:
            raise RuntimeError("Worker.run() called before start()")
        await pull_into_tasks(self._sub, stop, self._running, concurrency=self._config.concurrency,
                              handle=self._handle, task_name="run", on_fetch_error=self._fetch_failed)
        await self._drain()

    def _fetch_failed(self, exc: Exception) -> None:
        self.stats.last_error = f"fetch: {exc}"

    async def stop(self) -> None:
        sub, self._sub = self._sub, None
        if sub is not None:
            await sub.unsubscribe()

    async def _drain(self) -> None:
        if not self._running:
            return
        log.info("stopping: letting runs finish", in_flight=len(self._running))
        await asyncio.wait(set(self._running), timeout=self._config.finish_grace)
        if self._running:
            log.info("stopping: handing runs back", in_flight=len(self._running))
            self._stopping.set()
            left = max(self._config.stop_timeout - self._config.finish_grace, 0.1)
            await asyncio.wait(set(self._running), timeout=left)
        for task in list(self._running):
            task.cancel()
        if self._running:
            await asyncio.gather(*self._running, return_exceptions=True)

    async def _handle(self, msg: Msg) -> None:
        self.stats.received += 1
        beat = asyncio.create_task(keep_in_progress(msg, self._config.heartbeat), name="run-heartbeat")
        verdict: Verdict = "retry"
        try:
            verdict = await self._executor.handle_run(msg.data, deliveries=msg.metadata.num_delivered,
                                                      stopping=self._stopping)
        except InvalidRun as exc:
            verdict = await self._dead_letter(msg, str(exc))
        except asyncio.CancelledError:
            verdict = "drop"  # abandoned at shutdown: the message comes back after the ack wait
            raise
        except Exception as exc:
            self.stats.errors += 1
            self.stats.last_error = f"{type(exc).__name__}: {exc}"
            log.exception("run failed unexpectedly; it will be retried", subject=msg.subject)
        finally:
            beat.cancel()
            self.stats.count(verdict)
            await self._settle(msg, verdict)

    async def _settle(self, msg: Msg, verdict: Verdict) -> None:
        try:
            if verdict == "ack":
                await msg.ack()
            elif verdict == "nak":
                await msg.nak()
            elif verdict == "retry":
                await msg.nak(delay=min(2.0 * msg.metadata.num_delivered, 30.0))
            elif verdict == "term":
                await msg.term()
        except Exception as exc:  # the message returns after the ack wait; the task state holds
            log.warning("could not settle a run message", verdict=verdict, error=str(exc))

    async def _dead_letter(self, msg: Msg, reason: str) -> Verdict:
        meta = msg.metadata
        try:
            await dead_letter(self._js, self._subjects, stage=STAGE, data=msg.data, reason=reason,
                              original_subject=msg.subject, stream=meta.stream, sequence=meta.sequence.stream)
        except Exception as exc:
            # Retrying cannot make the run readable: say why here and drop it (never a loop).
            log.error("unreadable run dropped; it could not be dead-lettered", subject=msg.subject, reason=reason,
                      error=str(exc), stream_sequence=meta.sequence.stream)
            return "term"
        self.stats.dead_lettered += 1
        log.warning("run dead-lettered", subject=msg.subject, reason=reason)
        return "term"
