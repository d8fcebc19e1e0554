"""A `LaterTask` is a timer until its delay is over and a task from then on (shared/later_task.py)."""

from __future__ import annotations

import asyncio

from shared.later_task import LaterTask


async def test_work_starts_after_its_delay_and_its_cancel_cancels_the_task() -> None:
    started = asyncio.Event()

    async def work() -> None:
        started.set()
        await asyncio.sleep(3600)

    later = LaterTask(0.05, work, name="work")
    assert later.task is None  # a timer only, until the delay is over
    await asyncio.wait_for(started.wait(), 5)
    assert later.task is not None and later.task.get_name() == "work"
    later.cancel()
    await asyncio.gather(later.task, return_exceptions=True)
    assert later.task.cancelled()


async def test_work_cancelled_before_its_delay_never_starts() -> None:
    ran: list[str] = []
    kept_ran = asyncio.Event()

    async def work(name: str) -> None:
        ran.append(name)
        if name == "kept":
            kept_ran.set()

    cancelled = LaterTask(0.05, lambda: work("cancelled"), name="cancelled")
    LaterTask(0.1, lambda: work("kept"), name="kept")  # due after the cancelled one was
    cancelled.cancel()
    await asyncio.wait_for(kept_ran.wait(), 5)  # the later one ran: the earlier one's moment is past
    assert (ran, cancelled.task) == (["kept"], None)
