"""Batches from a pull consumer, on a pull request kept open (a workaround of nats-py's fetch).

A `Puller` keeps one pull request open on the server at a time: `batch` messages, `expires` the
fetch timeout, without `no_wait`. nats-server delivers each message on it as it comes, until the
batch is filled or the request expires; each `fetch` hands over what has come as soon as the last
message says the server held no more for the consumer then (its `num_pending`), and asks again
only once the open request is used up or has expired. So a trickle of messages costs one request
a second, not one per message, and no message waits for the rest of a batch.

nats-py's `PullSubscription.fetch(n)` for n > 1 held messages back: it takes whatever status
comes first for its request's answer, and a late 408 of an earlier, expired request often is that
status; it then sends a second request while the first still waits on the server, and waits, once
a message has come on either, for the rest of that request's batch until it expires (the fetch
timeout, a second). Measured on bench-e2e's stack with pauses of up to 1.5 s between events: one
event in five waited 0.2 to 0.7 s in the event-bridge (docs/reference/workarounds.md). Here a
status that comes while the open request has not expired is an earlier request's, and passed over.

The pull's inbox hands each message to the `Puller` in the read loop (shared/nats/inline_subscription.py),
and a fetch that has to wait awaits one future under one timer. nats-py's `next_msg` made a uuid
(a read of the system's random source), a task, and `asyncio.wait_for`'s task and timer for each
wait: in a stage that waits for each message, as one does between a chat's events, that was most
of what taking a message cost.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque

import nats.js.errors
from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext

from shared.nats.inline_subscription import hand_off_deliveries
from shared.nats.turn_client import time_out

_EXPIRED = "408"
_CONFLICT = "409"
_NO_MESSAGES = "404"
_HEARTBEAT = "100"
# Asked again this long before the open request expires, and a 408 this close to its expiry is
# taken as its own: the server's clock and ours start the request a little apart.
_MARGIN = 0.05
# The key of a waiting fetch among the inbox's waits nats-py cancels when the connection closes.
_WAIT_KEY = "aurora-puller"


class Puller:
    """Fetches from one pull subscription (only a Puller may fetch from it: the open request's
    messages are counted here)."""

    def __init__(self, sub: JetStreamContext.PullSubscription) -> None:
        self._sub = sub
        self._loop = asyncio.get_running_loop()
        self._open_until = 0.0  # when the open request expires (loop time); 0: none open
        self._left = 0  # messages still to come on it
        self._arrived: deque[Msg] = deque()  # delivered on the pull's inbox, not handed over yet
        self._waiter: asyncio.Future[None] | None = None  # a fetch waiting for the next message
        self._interrupted = False  # the stage stops: no fetch waits or asks any more
        # nats-py keeps the pull's inbox subscription private.
        hand_off_deliveries(sub._sub, self._arrive)

    def delivered(self) -> list[Msg]:
        """What was delivered and no fetch handed over yet, taken now (statuses left out): for a
        stage that stops, so another instance need not wait out the ack wait for it."""
        taken = [msg for msg in self._arrived if JetStreamContext.is_status_msg(msg) is None]
        self._arrived.clear()
        return taken

    def interrupt(self) -> None:
        """The stage stops: the fetch waiting now ends with what it has (none: its TimeoutError),
        and every later one at once, without asking. The open request may still deliver until it
        expires; what it brings is `delivered()`, for the stage to hand back."""
        self._interrupted = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def interrupt_on(self, stop: asyncio.Event, name: str) -> asyncio.Task[None]:
        """A task that calls `interrupt` once `stop` is set, for a stage's loop to run beside its
        fetches (and cancel when it ends): the stage stops without waiting out its open request
        (up to the fetch timeout). A loop run again after an earlier stop fetches again."""
        self._interrupted = False

        async def interrupt_when_stopped() -> None:
            await stop.wait()
            self.interrupt()

        return asyncio.create_task(interrupt_when_stopped(), name=name)

    async def fetch(self, batch: int, timeout: float) -> list[Msg]:
        """Up to `batch` messages, handed over as soon as the server has sent what it held;
        raises nats-py's TimeoutError when none came within `timeout`. A request the server ends
        with a 409 (a leader changing, a server shutting down) is asked again at once, and one
        ended so again in the same fetch waits out the fetch, as nats-py's fetch took a 409 for
        a timeout; a request nobody answers (503: the consumer or its stream gone) raises
        nats-py's APIError, as its fetch did."""
        deadline = self._loop.time() + timeout
        msgs: list[Msg] = []
        ended_once = False
        while len(msgs) < batch and not (self._interrupted and not self._arrived):
            if self._left <= 0 or self._loop.time() >= self._open_until - _MARGIN:
                if msgs or self._interrupted:
                    break  # the open request is used up: what came is handed over, the next fetch asks
                await self._ask(batch, max(deadline - self._loop.time(), _MARGIN * 2))
            try:
                msg = await self._next(max(min(deadline, self._open_until) - self._loop.time(), 0.0) + _MARGIN)
            except TimeoutError:
                if msgs or self._loop.time() >= deadline:
                    break
                continue  # the open request expired without its 408 (a reconnect): ask again
            status = JetStreamContext.is_status_msg(msg)
            if status is None:
                msgs.append(msg)
                self._left -= 1
                if _pending_after(msg) == 0:
                    break  # nothing more was there when it was sent: no reason to wait
            elif status == _HEARTBEAT:
                continue
            elif status in (_EXPIRED, _NO_MESSAGES):
                if self._loop.time() >= self._open_until - _MARGIN:
                    self._left = 0  # the open request's own end
                    if msgs or self._loop.time() >= deadline:
                        break
                # else an earlier request's end, come late: the open one still waits
            elif status == _CONFLICT:  # the server ended the request: a leader changing, a server shutting down
                self._left = 0
                if msgs:
                    break
                if ended_once:  # ended again: no leader yet; waited out as nats-py's fetch did, not asked on and on
                    await asyncio.sleep(max(deadline - self._loop.time(), 0.0))
                    break
                ended_once = True  # once is the moment of the change: asked again at once
            else:  # nobody answers the request (503: the consumer or its stream is gone), or worse
                self._left = 0
                if msgs:
                    break
                raise nats.js.errors.APIError.from_msg(msg)
        if not msgs:
            raise NatsTimeoutError
        return msgs

    async def _ask(self, batch: int, timeout: float) -> None:
        request = {"batch": batch, "expires": int(timeout * 1_000_000_000)}
        # nats-py keeps the pull's request subject, inbox and connection private.
        sub = self._sub
        await sub._nc.publish(sub._nms, json.dumps(request).encode(), reply=sub._deliver)
        self._open_until = self._loop.time() + timeout
        self._left = batch


    def _arrive(self, msg: Msg) -> None:
        self._arrived.append(msg)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def _next(self, timeout: float) -> Msg:
        """The next message delivered, waiting up to `timeout` seconds for it; nats-py's errors
        as its `next_msg` raised them: its TimeoutError, and ConnectionClosedError once the
        connection is closed (nats-py cancels the wait then)."""
        if not self._arrived:
            inbox = self._sub._sub
            if inbox._conn.is_closed:
                raise ConnectionClosedError
            waiter = self._waiter = self._loop.create_future()
            timer = self._loop.call_later(timeout, time_out, waiter)
            waits = inbox._pending_next_msgs_calls
            waits[_WAIT_KEY] = waiter  # type: ignore[assignment]  # a future: all nats-py does is cancel it
            try:
                await waiter
            except asyncio.CancelledError:
                if inbox._conn.is_closed:
                    raise ConnectionClosedError from None
                raise
            finally:
                timer.cancel()
                self._waiter = None
                waits.pop(_WAIT_KEY, None)
            if not self._arrived:  # woken by `interrupt`
                raise TimeoutError
        return self._arrived.popleft()


def _pending_after(msg: Msg) -> int:
    """How many more messages the server held for the consumer when it sent this one."""
    try:
        return int(msg.metadata.num_pending or 0)
    except Exception:  # no JetStream reply subject to read it from: as if more were coming
        return 1
