"""How a service is put together, as a function: each service's `wiring.py` has a plain
`build_<service>(setup, connections)` that constructs its parts and returns an `Assembly`.

- `setup` is everything the service read and checked before connecting (its settings loaders);
  `connections` is what it may do I/O through. A build opens what must exist before anything
  runs (streams, buckets) through them, and starts nothing: no task, no subscription.
- The `Assembly` is the parts in start order. `start()` starts them in that order, `stop()` stops
  them in the reverse order (a failed start stops what had started), so the stop order is code,
  read from one tuple, not comments.
- `Assembly.parts` names each part (a frozen dataclass of the service's own), so a test that builds
  a service in-process over a real nats-server reaches any of them.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from nats.aio.client import Client as NATS
from nats.js.client import JetStreamContext

from shared.lifecycle import Lifecycle

P = TypeVar("P")


class Part(Protocol):
    """A long-lived part of a service: a `Lifecycle`, or anything started and stopped alike."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class _Stoppable(Protocol):
    async def stop(self) -> None: ...


@dataclass(frozen=True)
class Connections:
    """What a service does its I/O through; the composition root connects, a test passes its own."""

    nc: NATS

    @property
    def js(self) -> JetStreamContext:
        return self.nc.jetstream()


class StartedBy(Lifecycle[_Stoppable]):
    """A part made by an async factory that starts it and returns what stops it (a NATS micro
    service, a subscription's holder): the factory runs at `start()`, never at build time."""

    def __init__(self, name: str, start: Callable[[], Awaitable[_Stoppable]]) -> None:
        super().__init__(name)
        self._factory = start

    async def _start(self, parts: contextlib.AsyncExitStack) -> _Stoppable:
        started = await self._factory()
        parts.push_async_callback(started.stop)
        return started


class Assembly(Lifecycle[None], Generic[P]):
    """A service: its parts started in `order`, stopped in reverse, then `run` until stopped.

    `ready` (optional) runs once every part has started: what "started" must also mean for the
    service (its subscriptions reached the server, one "ready" log line)."""

    def __init__(self, name: str, parts: P, order: Sequence[Part], *,
                 run: Callable[[asyncio.Event], Awaitable[None]] | None = None,
                 ready: Callable[[], Awaitable[None]] | None = None) -> None:
        super().__init__(name)
        self.parts = parts
        self.order = tuple(order)
        self._run = run
        self._ready = ready

    async def _start(self, stack: contextlib.AsyncExitStack) -> None:
        for part in self.order:
            # Registered before it starts: a part whose own start fails half-way stops what it began.
            stack.push_async_callback(part.stop)
            await part.start()
        if self._ready is not None:
            await self._ready()

    async def run(self, stop: asyncio.Event) -> None:
        """Serve until `stop` is set (SIGTERM), or until the service's own run loop ends."""
        self.require_started()
        if self._run is None:
            await stop.wait()
        else:
            await self._run(stop)
