"""What the gateway reports leaves through ordered outboxes, off the call path.

Signals for the bridge and audit records are JetStream publishes; doing them inline would add
a round trip to every tool call and stall the MCP read loop. An outbox publishes its items in
order in the background, retries while NATS is away, and is flushed on stop. `send` publishes
one item and returns the future of its ack (`shared.nats.acked_publish`): a batch is sent at once
and its acks awaited together under one timeout, with no task or timer per item.

With `send_now` (the item published without waiting, or None when it cannot be), an item
put while nothing waits in the queue is published right in `put`, and its ack settles it by a
callback: no wake-up of the outbox's task per item, which a sequential tool call otherwise paid
for its audit record (the task woke for the item, then again for its ack). Up to `window` such
publishes are in flight; one whose ack fails or does not come within `ack_timeout` goes to the
queue, where the task retries it as any other.

An item may come with `done`, called once JetStream has stored it (an app's event whose
supervisor waits for that confirmation); never for an item dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from nats.js.errors import APIError

from shared.lifecycle import Lifecycle, cancel_task
from shared.observability.logs import get_logger
from shared.streak import FailureStreak

log = get_logger("aurora.mcp_gateway.outbox")
T = TypeVar("T")
Done = Callable[[], None] | None
RETRY_PAUSE, RETRY_PAUSE_MAX = 0.2, 5.0  # before an item's first retry, and the longest between retries
# JetStream's err_code when a copy of the message (same message id) is still being stored: a
# clustered stream whose earlier attempt's ack was lost in a fault. Not a failure: asked again
# once that copy is stored, the stream answers with a duplicate ack.
STILL_BEING_STORED = 10158


class Outbox(Lifecycle[None], Generic[T]):
    """`stop()` waits at most `stop_timeout` seconds for what is queued or in flight to be stored."""

    def __init__(self, name: str, send: Callable[[T], Awaitable[asyncio.Future[Any]]], capacity: int = 10_000,
                 window: int = 64, ack_timeout: float = 5.0,
                 send_now: Callable[[T], asyncio.Future[Any] | None] | None = None,
                 stop_timeout: float = 5.0) -> None:
        super().__init__(f"the {name} outbox")
        self._name = name
        self._stop_timeout = stop_timeout
        self._window = window
        self._send = send
        self._send_now = send_now
        self._ack_timeout = ack_timeout
        self._queue: asyncio.Queue[tuple[T, Done]] = asyncio.Queue(capacity)
        self._working = False  # the task holds a batch (or retries one of its items)
        # Published in `put`, waiting for their acks: future → (item, done, deadline), in send order.
        self._in_flight: dict[asyncio.Future[Any], tuple[T, Done, float]] = {}
        self._quiet = asyncio.Event()  # nothing in flight
        self._quiet.set()
        self._sweep: asyncio.TimerHandle | None = None
        # An outage fails every try of every item: said when it begins, every 10 s and when it ends.
        self._failing = FailureStreak(log, "outbox publish", outbox=name)
        self.dropped = 0

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        task = asyncio.create_task(self._run(), name=f"gateway-outbox-{self._name}")
        parts.push_async_callback(self._finish, task)

    def put(self, item: T, done: Done = None) -> None:
        if (self._send_now is not None and self.started and not self._working
                and self._queue.empty() and len(self._in_flight) < self._window):
            try:
                ack = self._send_now(item)
            except Exception:  # the task's `send` meets it again and retries it, saying why
                ack = None
            if ack is not None:
                self._track(item, done, ack)
                return
        self._enqueue(item, done)

    def _enqueue(self, item: T, done: Done) -> None:
        try:
            self._queue.put_nowait((item, done))
        except asyncio.QueueFull:
            self.dropped += 1
            log.error("outbox full; item dropped", outbox=self._name, dropped=self.dropped)

    async def _finish(self, task: asyncio.Task[None]) -> None:
        """Publish what is left (at most `stop_timeout` seconds), then end the task."""
        timeout = self._stop_timeout
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._drained(), timeout)
        left = self._queue.qsize() + len(self._in_flight)
        if left:  # never silently: what could not be published in time is said once, counted
            self.dropped += left
            log.error("outbox stopped before publishing everything; items dropped", outbox=self._name,
                      dropped=left, timeout=timeout)
        await cancel_task(task)
        in_flight, self._in_flight = self._in_flight, {}
        for ack in in_flight:  # counted above: their callbacks must not queue them again
            ack.remove_done_callback(self._settled)
            ack.cancel()
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None

    async def _drained(self) -> None:
        # An item whose ack fails is queued before it leaves the in-flight set, so once nothing is
        # in flight the queue holds everything still to publish.
        while True:
            await self._quiet.wait()
            await self._queue.join()
            if not self._in_flight:
                return

    def _track(self, item: T, done: Done, ack: asyncio.Future[Any]) -> None:
        loop = asyncio.get_running_loop()
        self._in_flight[ack] = (item, done, loop.time() + self._ack_timeout)
        self._quiet.clear()
        ack.add_done_callback(self._settled)
        if self._sweep is None:
            self._sweep = loop.call_later(self._ack_timeout, self._expire)

    def _settled(self, ack: asyncio.Future[Any]) -> None:
        entry = self._in_flight.get(ack)
        if entry is None:
            return
        item, done, _ = entry
        error = _failure(ack)
        if error is not None:
            self._said_failed(error)
            self._enqueue(item, done)
        else:
            self._failing.worked()
            if done is not None:
                done()
        del self._in_flight[ack]
        if not self._in_flight:
            self._quiet.set()

    def _expire(self) -> None:
        """Acks not come in time fail (and their items go to the queue); one timer for all of
        them, set again for the oldest one left."""
        self._sweep = None
        now = asyncio.get_running_loop().time()
        for ack, (_, _, deadline) in list(self._in_flight.items()):
            if deadline > now:
                self._sweep = asyncio.get_running_loop().call_later(deadline - now, self._expire)
                return
            ack.cancel()  # `_settled` takes it as a lost ack

    async def _run(self) -> None:
        # Up to `window` publishes are in flight at once (their acks awaited together), sent in
        # queue order; one that fails is retried on its own until it gets through.
        while True:
            batch = [await self._queue.get()]
            self._working = True
            while len(batch) < self._window and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            acks: list[asyncio.Future[Any] | Exception] = []
            for item, _ in batch:
                try:
                    acks.append(await self._send(item))
                except Exception as exc:
                    acks.append(exc)
            pending = [ack for ack in acks if isinstance(ack, asyncio.Future)]
            if pending:
                await asyncio.wait(pending, timeout=self._ack_timeout)
            through = False  # an item of this batch got through: the rest is sent again at once
            for (item, done), ack in zip(batch, acks, strict=True):
                error = _failure(ack)
                if error is not None:
                    await self._retry(item, error, pause=0.0 if through else RETRY_PAUSE)
                else:
                    self._failing.worked()
                through = True
                if done is not None:
                    done()
                self._queue.task_done()
            self._working = False

    async def _publish(self, item: T) -> None:
        await asyncio.wait_for(await self._send(item), self._ack_timeout)

    async def _retry(self, item: T, error: Exception, pause: float) -> None:
        """Publish `item` until it is stored: after `pause` (0: at once), then after pauses that
        double up to `RETRY_PAUSE_MAX`. An item behind one that got through goes at once: the
        outage is over, and a pause each would hold a whole window of items up 0.2 s apiece."""
        while True:
            if pause:
                self._said_failed(error)
                await asyncio.sleep(pause)
            try:
                await self._publish(item)
                self._failing.worked()
                return
            except Exception as exc:
                error = exc
            pause = min(max(pause * 2, RETRY_PAUSE), RETRY_PAUSE_MAX)

    def _said_failed(self, error: Exception) -> None:
        """An item is sent again after `error`. An earlier copy still being stored is routine in a
        cluster after a fault (a leader change can keep answering so for a while): info, where a
        warning would cry wolf at every item of the outage. Any other failure is part of the
        outbox's failure streak."""
        if isinstance(error, APIError) and error.err_code == STILL_BEING_STORED:
            log.info("outbox item still being stored from an earlier attempt; asking again",
                     outbox=self._name, error=str(error))
        else:
            self._failing.failed(error)


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
