"""Events that matched no binding, held for one shared look at the bindings bucket.

A binding applied a moment before its event may not have reached this router's watch yet. So an
event that matched no binding is routed again once the router's copy holds every binding the
bucket held after the event was received (`RouteCatalog.bindings_caught_up`: one stream-info
request, and a read of the bucket when behind). That look was made for every batch holding such
an event; with the platform's own `task.*` and `tool.*` events, which bindings rarely take, that
was most batches: a third of the router's work per event, and as much again in nats-server
(docs/benchmarks.md).

Now such events are held here, and one look serves every event held when it starts, at most one
look every `spacing` seconds. The guarantee is the same: each event is routed again after a look
that began after it was received. What changes is when: an event a binding takes is routed at
once as before, while an unrouted event's trace and acknowledgement wait up to `spacing`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

from shared.observability.logs import get_logger

log = get_logger("aurora.router.unrouted")
T = TypeVar("T")


class HeldForCatchUp(Generic[T]):
    """Holds items until a look at the bindings made after they came (`caught_up`: True when it
    found bindings the copy lacked), then gives them to `settle` with what it found. `run` looks
    whenever items are held, at most every `spacing` seconds; `flush` looks at once."""

    def __init__(self, caught_up: Callable[[], Awaitable[bool]],
                 settle: Callable[[list[T], bool], Awaitable[None]], *, spacing: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._caught_up = caught_up
        self._settle = settle
        self._spacing = spacing
        self._clock = clock
        self._held: list[T] = []
        self._waiting = asyncio.Event()
        self._looking = asyncio.Lock()
        self._last_look = float("-inf")
        self.looks = 0  # how many looks were made (the count a benchmark or test reads)

    @property
    def held(self) -> int:
        return len(self._held)

    def hold(self, items: list[T]) -> None:
        if items:
            self._held.extend(items)
            self._waiting.set()

    async def run(self) -> None:
        """Until cancelled: look for what is held, each look at least `spacing` after the last."""
        while True:
            await self._waiting.wait()
            pause = self._last_look + self._spacing - self._clock()
            if pause > 0:
                await asyncio.sleep(pause)
            try:
                await self.flush()
            except Exception:  # `settle` settles every item it is given; a fault here must not stop the loop
                log.exception("held unrouted events could not be settled; they come again after the ack wait")

    async def flush(self) -> None:
        """Look now for everything held, until nothing is (what comes while a look is made waits
        for the next one: that look began before it came)."""
        async with self._looking:
            while self._held:
                items, self._held = self._held, []
                self._waiting.clear()
                self._last_look = self._clock()
                self.looks += 1
                found = await self._caught_up()
                await self._settle(items, found)
