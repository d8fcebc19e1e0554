"""Beside each attempt: its task stored once the run takes a while, and an operator's cancel noticed.

A new run's task is written at its first durable change (tasks/store.py), so a run that ends at
once is one revision. A run still going after `SHOWN_AFTER` is stored then even if it changed
nothing yet: `aurora tasks` lists it running, its `task.running` event goes out, and an operator
can cancel it. From then on the task is polled every `heartbeat` for a cancel request, which a
run that writes nothing would not see otherwise.
"""

from __future__ import annotations

import asyncio
from functools import partial

from services.runner.errors import LostOwnership
from services.runner.tasks.store import TaskHandle
from shared.later_task import LaterTask
from shared.observability.logs import get_logger

log = get_logger("aurora.runner.watch")
SHOWN_AFTER = 0.5  # seconds: a human does not notice a task listed this late; most runs end sooner


def watch_later(handle: TaskHandle, *, heartbeat: float) -> LaterTask:
    """The watch of a run's task, started `SHOWN_AFTER` (or `heartbeat`, if shorter) into the run:
    most runs end sooner and never need it (shared/later_task.py). Cancel it when the run ends."""
    return LaterTask(min(SHOWN_AFTER, heartbeat), partial(watch_task, handle, heartbeat=heartbeat),
                     name=f"task-watch-{handle.task.id}")


async def watch_task(handle: TaskHandle, *, heartbeat: float) -> None:
    """Until cancelled: store the task now if the run has not, then poll it every `heartbeat`."""
    while True:
        try:
            if handle.stored:
                await handle.poll()
            else:
                await handle.update(lambda task: task)
        except LostOwnership:
            return  # another attempt holds the task: the run learns it at its next write
        except Exception as exc:  # a missed poll only delays the cancel to the next write
            log.debug("task watch failed", task=handle.task.id, error=str(exc))
        await asyncio.sleep(heartbeat)
