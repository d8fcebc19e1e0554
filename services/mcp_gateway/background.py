"""A loop the gateway runs in the background from its start to its stop, as one part.

`BackgroundLoop` runs `_loop(halt)` in one task from `start()`; `stop()` sets `halt` and waits for
the loop to return, so a loop ends between two of its steps, never cancelled in one. A loop that
had already failed is logged at stop, not raised again: the rest of the gateway still stops.
"""

from __future__ import annotations

import asyncio
import contextlib

from shared.lifecycle import Lifecycle
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway")


class BackgroundLoop(Lifecycle[None]):
    def __init__(self, name: str, task_name: str) -> None:
        super().__init__(name)
        self._task_name = task_name

    async def _loop(self, halt: asyncio.Event) -> None:
        raise NotImplementedError

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        halt = asyncio.Event()
        task = asyncio.create_task(self._loop(halt), name=self._task_name)
        parts.push_async_callback(self._halt, halt, task)

    async def _halt(self, halt: asyncio.Event, task: asyncio.Task[None]) -> None:
        halt.set()
        [outcome] = await asyncio.gather(task, return_exceptions=True)
        if isinstance(outcome, Exception):
            log.warning("a background task had failed", part=self.name,
                        error=f"{type(outcome).__name__}: {outcome}")
