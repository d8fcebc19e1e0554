"""The fetch loop the runner's consumers share: pull only as many messages as there are free
slots, and run each one in its own task."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext

from shared.logs import get_logger

log = get_logger("aurora.runner.pulling")


async def pull_into_tasks(
    sub: JetStreamContext.PullSubscription,
    stop: asyncio.Event,
    running: set[asyncio.Task[None]],
    *,
    concurrency: int,
    handle: Callable[[Msg], Coroutine[Any, Any, None]],
    task_name: str,
    on_fetch_error: Callable[[Exception], None] | None = None,
) -> None:
    """Until `stop` is set: keep at most `concurrency` tasks in `running`, one per message."""
    while not stop.is_set():
        free = concurrency - len(running)
        if free <= 0:
            await asyncio.wait(running, timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
            continue
        try:
            msgs = await sub.fetch(free, timeout=1.0)
        except (NatsTimeoutError, TimeoutError):
            continue
        except Exception as exc:  # connection trouble: nats-py reconnects; try again
            if on_fetch_error is not None:
                on_fetch_error(exc)
            log.warning("fetch failed", consumer=task_name, error=str(exc))
            await asyncio.sleep(0.5)
            continue
        for msg in msgs:
            task = asyncio.create_task(handle(msg), name=f"{task_name}-{msg.metadata.sequence.stream}")
            running.add(task)
            task.add_done_callback(running.discard)


async def keep_in_progress(msg: Msg, every: float) -> None:
    """Tell JetStream the message is still being worked on, every `every` seconds, until
    cancelled: a long run or resume keeps its message without a shorter ack wait."""
    while True:
        await asyncio.sleep(every)
        try:
            await msg.in_progress()
        except Exception as exc:
            log.warning("heartbeat failed", subject=msg.subject, error=str(exc))
