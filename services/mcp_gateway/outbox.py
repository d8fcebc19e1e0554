"""Everything the gateway observes leaves through one ordered outbox, off the call path.

Signals for the bridge (lifecycle, notifications, tool results) are JetStream publishes; doing
them inline would add a round trip to every tool call and stall the MCP read loop. The outbox
publishes them in order in the background, retries while NATS is away, and is flushed on stop.
"""

from __future__ import annotations

import asyncio
import contextlib

from nats.js import JetStreamContext

from shared.contracts.signals import SignalBase
from shared.logs import get_logger
from shared.signal_publisher import publish_signal
from shared.subjects import Subjects

log = get_logger("aurora.mcp_gateway.outbox")


class SignalOutbox:
    def __init__(self, js: JetStreamContext, subjects: Subjects, capacity: int = 10_000) -> None:
        self._js = js
        self._subjects = subjects
        self._queue: asyncio.Queue[SignalBase] = asyncio.Queue(capacity)
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="gateway-signal-outbox")

    def put(self, signal: SignalBase) -> None:
        try:
            self._queue.put_nowait(signal)
        except asyncio.QueueFull:
            self.dropped += 1
            log.error("signal outbox full; signal dropped", app=signal.app, dropped=self.dropped)

    async def stop(self, timeout: float = 5.0) -> None:
        if self._task is None:
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def _run(self) -> None:
        while True:
            signal = await self._queue.get()
            delay = 0.2
            while True:
                try:
                    await publish_signal(self._js, self._subjects, signal)
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.warning("signal publish failed; retrying", app=signal.app, error=str(exc))
                    await asyncio.sleep(delay)
                    delay = min(delay * 2, 5.0)
            self._queue.task_done()
