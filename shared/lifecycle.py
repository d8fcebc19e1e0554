"""One lifecycle for every service and long-lived part: started once, stopped once, a failed
start unwound.

A part subclasses `Lifecycle[T]` and writes `_start(parts)`: it starts its pieces in order,
registering each one's stop on `parts` (an `AsyncExitStack`) as soon as that piece is started,
and returns what it runs with (`T`: a subscription, a dataclass of its parts, or None). Then:

- `start()` runs `_start` once; a second call, or one made while the first is still running,
  does nothing more. When `_start` raises, whatever it had registered is stopped, newest first,
  before the error goes on: a start that fails half-way leaves nothing running.
- `stop()` stops what `start()` registered, newest first (the stop order is the start order
  reversed, in code); idempotent, and nothing to do before a start.
- `require_started()` is `_start`'s result; before `start()` or after `stop()` it raises
  `NotStarted` naming the part.
- `async with part:` starts it and stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType
from typing import Any, Generic, Protocol, Self, TypeVar

from shared.errors import AuroraError
from shared.observability.logs import get_logger

T = TypeVar("T")


class Runnable(Protocol):
    """What a service's composition root drives (`shared.service.run_until_stopped`): start,
    run until told to stop, stop; a `Lifecycle` with a `run`."""

    async def start(self) -> None: ...

    async def run(self, stop: asyncio.Event) -> None: ...

    async def stop(self) -> None: ...


class _Unsubscribable(Protocol):
    async def unsubscribe(self) -> None: ...

log = get_logger("aurora.lifecycle")


class NotStarted(AuroraError):
    """A part was used before its `start()` (or after its `stop()`)."""

    def __init__(self, part: str) -> None:
        super().__init__(f"{part} used before start() or after stop()")
        self.part = part


class StartFailed(AuroraError):
    """A service's start failed on an error that is not one of Aurora's own; what had started
    was stopped."""

    def __init__(self, cause: BaseException) -> None:
        text = str(cause)
        super().__init__(f"start-up failed: {type(cause).__name__}{': ' + text if text else ''} "
                         "(what had started was stopped)")
        self.cause = cause


class Lifecycle(Generic[T]):
    """Start once, stop once, unwind a failed start; see the module's docstring."""

    def __init__(self, name: str | None = None) -> None:
        self.name = name or type(self).__name__
        self.__stack: contextlib.AsyncExitStack | None = None
        self.__running: T | None = None
        self.__lock = asyncio.Lock()  # a start and a stop never interleave

    async def _start(self, parts: contextlib.AsyncExitStack) -> T:
        raise NotImplementedError

    @property
    def started(self) -> bool:
        return self.__stack is not None

    def require_started(self) -> T:
        """What `_start` returned; `NotStarted` naming the part before start or after stop."""
        if self.__stack is None:
            raise NotStarted(self.name)
        return self.__running  # type: ignore[return-value]  # set with the stack, T may be None

    async def start(self) -> None:
        async with self.__lock:
            if self.__stack is not None:
                return
            parts = contextlib.AsyncExitStack()
            try:
                running = await self._start(parts)
            except BaseException as exc:
                await self._unwind(parts, exc)
                raise
            self.__stack, self.__running = parts, running

    async def stop(self) -> None:
        async with self.__lock:
            parts, self.__stack, self.__running = self.__stack, None, None
            if parts is not None:
                await parts.aclose()

    async def _unwind(self, parts: contextlib.AsyncExitStack, cause: BaseException) -> None:
        """Stop what a failed start had started; a stop that fails too is logged, and the start's
        own error is the one raised."""
        try:
            await parts.aclose()
        except Exception as exc:
            log.warning("stopping what a failed start had started failed too", part=self.name,
                        error=f"{type(exc).__name__}: {exc}", cause=f"{type(cause).__name__}: {cause}")
        else:
            log.info("start failed; what had started was stopped", part=self.name,
                     error=f"{type(cause).__name__}: {cause}")

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.stop()


async def cancel_task(task: asyncio.Task[Any]) -> None:
    """A background task's stop (`parts.push_async_callback(cancel_task, task)`): cancelled and
    awaited; what it raised on its way out is its own to log."""
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


async def unsubscribe(sub: _Unsubscribable) -> None:
    """A subscription's stop (`parts.push_async_callback(unsubscribe, sub)`); a connection already
    closed has nothing left to unsubscribe, and says so only at debug level."""
    try:
        await sub.unsubscribe()
    except Exception as exc:
        log.debug("unsubscribe failed", error=f"{type(exc).__name__}: {exc}")
