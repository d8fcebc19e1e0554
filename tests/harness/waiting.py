"""Waiting in tests for a positive sign: one poll helper (async, and its twin for sync tests),
and "this consumer has processed everything up to here" for asserting that something did NOT
happen only once the work that could have done it is known to be finished.

A probe's exceptions are not swallowed: a probe that can legitimately fail for a while (no
responders yet) says so itself, for the one error it expects.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import ConsumerInfo
from nats.js.errors import NotFoundError

T = TypeVar("T")

# What a request to a service that is still starting raises: nobody subscribed yet, or its
# subscription is there but it does not answer yet. Anything else is a real error.
NOT_SERVING_YET: tuple[type[Exception], ...] = (NoRespondersError, NatsTimeoutError)


class TimedOut(AssertionError):
    """What `poll` raises when the sign never came (a failed assertion in the probe propagates
    as itself)."""


def _timed_out(timeout: float, what: str, last: object) -> TimedOut:
    return TimedOut(f"timed out after {timeout}s waiting for {what}; last: {last!r}"[:4000])


async def poll(probe: Callable[[], Awaitable[T | None]], *, timeout: float = 20.0, what: str,
               interval: float = 0.05) -> T:
    """Await `probe()` until it returns something truthy and return that; fail naming `what`
    (and the last value seen) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        last = await probe()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise _timed_out(timeout, what, last)
        await asyncio.sleep(interval)


def poll_sync(probe: Callable[[], T | None], *, timeout: float = 10.0, what: str, interval: float = 0.05) -> T:
    """`poll` for tests without an event loop (a thread, a subprocess)."""
    deadline = time.monotonic() + timeout
    while True:
        last = probe()
        if last:
            return last
        if time.monotonic() >= deadline:
            raise _timed_out(timeout, what, last)
        time.sleep(interval)


async def last_seq(js: JetStreamContext, stream: str, subject: str) -> int:
    """The stream sequence of the last message stored on `subject` (0 when there is none)."""
    try:
        msg = await js.get_last_msg(stream, subject)
    except NotFoundError:
        return 0
    return int(msg.seq or 0)


async def consumed(js: JetStreamContext, stream: str, durable: str, *, through: int = 0, timeout: float = 20.0,
                   what: str | None = None) -> ConsumerInfo:
    """Wait until durable consumer `durable` on `stream` has been handed every message stored
    for it (at least up to stream sequence `through`) and has acknowledged (or terminated) each:
    whatever its service does with those messages is then done."""

    async def done() -> ConsumerInfo | None:
        info = await js.consumer_info(stream, durable)
        delivered = info.delivered.stream_seq if info.delivered and info.delivered.stream_seq else 0
        idle = not info.num_pending and not info.num_ack_pending
        return info if idle and delivered >= through else None

    return await poll(done, timeout=timeout, what=what or f"{durable} to process {stream} through seq {through}")
