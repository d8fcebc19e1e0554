"""One connection attempt and the waits that race it: a call or a probe ends when its answer
comes, when its timeout passes, or when the attempt is lost, whichever is first."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from mcp import ClientSession

from services.mcp_gateway.transports.direct import DirectCalls

T = TypeVar("T")


@dataclass
class Attempt:
    """One connection attempt; `lost` ends it (process exited or restarted, transport closed)."""

    lost: asyncio.Event = field(default_factory=asyncio.Event)
    # `lost` as a future too: a call can wait on it beside its answer without a task of its own.
    lost_future: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    reason: str | None = None
    session: ClientSession | None = None
    direct: DirectCalls | None = None  # tool calls the gateway writes itself (stdio apps over NATS)

    @property
    def live(self) -> bool:
        """A session made and not lost. (A session's status says connected for a moment after its
        attempt was lost, until the session task has seen it end.)"""
        return self.session is not None and not self.lost.is_set()

    def lose(self, reason: str) -> None:
        if not self.lost.is_set():
            self.reason = reason
            self.lost.set()
            self.lost_future.set_result(None)


class Lost(Exception):
    """The attempt was lost before the awaited work finished."""


class NotSent(Exception):
    """The relay closed before the call went out: nothing ran."""


def sole_cause(exc: Exception) -> BaseException:
    """The transport's and the SDK's task groups wrap what the session raised in exception
    groups; a group of one is that one exception (its reason is what health must show)."""
    cause: BaseException = exc
    while isinstance(cause, BaseExceptionGroup) and len(cause.exceptions) == 1:
        cause = cause.exceptions[0]
    return cause


async def race(work: Awaitable[T], lost: asyncio.Event, timeout: float) -> T:
    """`work`'s result, unless `lost` is set first (`Lost`) or `timeout` passes (TimeoutError)."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(lost.wait())
    try:
        done, _ = await asyncio.wait({task, waiter}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        waiter.cancel()
    if task in done:
        return task.result()
    task.cancel()
    with contextlib.suppress(BaseException):
        await task
    if lost.is_set():
        raise Lost
    raise TimeoutError


async def wait_any(*waits: Awaitable[Any], timeout: float | None = None) -> None:
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


class Changes:
    """Wakes whoever waits for a state to hold each time the state changes."""

    def __init__(self) -> None:
        self._changed = asyncio.Condition()

    async def changed(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def holds_within(self, holds: Callable[[], bool], timeout: float) -> bool:
        """Whether `holds()` is true now or comes to be within `timeout` seconds."""
        try:
            async with asyncio.timeout(max(timeout, 0.0)), self._changed:
                await self._changed.wait_for(holds)
        except TimeoutError:
            return holds()
        return True
