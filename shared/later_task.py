"""Work started as a task only if it is still wanted after a delay.

A run's heartbeat (JetStream's in-progress) and its task watch begin after a delay, and most
runs end before it: a task started at once for each slept, then was cancelled, three turns of the
event loop and two tasks per run for nothing. A `LaterTask` is a timer until its delay is over,
and a task only from then on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any


class LaterTask:
    """`work()` started as a task `delay` seconds from now, unless `cancel()` comes first."""

    def __init__(self, delay: float, work: Callable[[], Coroutine[Any, Any, None]], *, name: str) -> None:
        self._work = work
        self._name = name
        self.task: asyncio.Task[None] | None = None  # once started
        self._timer = asyncio.get_running_loop().call_later(delay, self._start)

    def _start(self) -> None:
        self.task = asyncio.create_task(self._work(), name=self._name)

    def cancel(self) -> None:
        """Not started: it never will be. Started: its task is cancelled."""
        self._timer.cancel()
        if self.task is not None:
            self.task.cancel()
