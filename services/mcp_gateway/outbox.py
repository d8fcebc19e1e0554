"""What the gateway reports leaves through ordered outboxes, off the call path.

Signals for the bridge and audit records are JetStream publishes; doing them inline would add
a round trip to every tool call and stall the MCP read loop. An outbox publishes its items in
order in the background, retries while NATS is away, and is flushed on stop. `send` publishes
one item and returns the future of its ack (`shared.acked_publish`): a batch is sent at once
and its acks awaited together under one timeout, with no task or timer per item.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from shared.logs import get_logger

log = get_logger("aurora.mcp_gateway.outbox")
T = TypeVar("T")


class Outbox(Generic[T]):
    def __init__(self, name: str, send: Callable[[T], Awaitable[asyncio.Future[Any]]], capacity: int = 10_000,
                 window: int = 64, ack_timeout: float = 5.0) -> None:
        self._name = name
        self._window = window
        self._send = send
        self._ack_timeout = ack_timeout
        self._queue: asyncio.Queue[T] = asyncio.Queue(capacity)
        self._task: asyncio.Task[None] | None = None
        self.dropped = 0

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"gateway-outbox-{self._name}")

    def put(self, item: T) -> None:
        try:
            self._queue.put_nowait(item)
        except asyncio.QueueFull:
            self.dropped += 1
            log.error("outbox full; item dropped", outbox=self._name, dropped=self.dropped)

    async def stop(self, timeout: float = 5.0) -> None:
        if self._task is None:
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._queue.join(), timeout)
        left = self._queue.qsize()
        if left:  # never silently: what could not be published in time is said once, counted
            self.dropped += left
            log.error("outbox stopped before publishing everything; items dropped", outbox=self._name,
                      dropped=left, timeout=timeout)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._task = None

    async def _run(self) -> None:
        # Up to `window` publishes are in flight at once (their acks awaited together), sent in
        # queue order; one that fails is retried on its own until it gets through.
        while True:
            batch = [await self._queue.get()]
            while len(batch) < self._window and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            acks: list[asyncio.Future[Any] | Exception] = []
            for item in batch:
                try:
                    acks.append(await self._send(item))
                except Exception as exc:
                    acks.append(exc)
            pending = [ack for ack in acks if isinstance(ack, asyncio.Future)]
            if pending:
                await asyncio.wait(pending, timeout=self._ack_timeout)
            for item, ack in zip(batch, acks, strict=True):
                error = _failure(ack)
                if error is not None:
                    await self._retry(item, error)
                self._queue.task_done()

    async def _publish(self, item: T) -> None:
        await asyncio.wait_for(await self._send(item), self._ack_timeout)

    async def _retry(self, item: T, error: Exception) -> None:
        delay = 0.2
        while True:
            log.warning("outbox publish failed; retrying", outbox=self._name, error=str(error))
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)
            try:
                await self._publish(item)
                return
            except Exception as exc:
                error = exc


def _failure(ack: asyncio.Future[Any] | Exception) -> Exception | None:
    """Why a sent item is not known to be stored (None: its ack came)."""
    if isinstance(ack, Exception):
        return ack
    if not ack.done():
        ack.cancel()
        return TimeoutError("no JetStream ack in time")
    if ack.cancelled():
        return TimeoutError("the ack was given up on")
    error = ack.exception()
    return error if isinstance(error, Exception) or error is None else RuntimeError(repr(error))
