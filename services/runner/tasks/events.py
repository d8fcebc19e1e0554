"""`task.*` platform events: every state change of a task, through the event-bridge."""

from __future__ import annotations

import asyncio
from datetime import datetime
from typing import Any

from shared.clock import now_iso
from shared.contracts.signals import RUNNER_APP, PlatformEventSignal
from shared.contracts.subjects import Subjects
from shared.contracts.task import TERMINAL_STATES, Task
from shared.nats.acked_publish import AckedPublisher
from shared.nats.signal_publisher import send_signal
from shared.observability import metrics
from shared.observability.logs import get_logger

log = get_logger("aurora.runner.events")


def task_signal(task: Task, *, instance: str) -> PlatformEventSignal:
    """The signal for the task's latest transition. Its id is fixed by (task, transition number),
    so publishing it again after a crash adds no second event."""
    last = task.transitions[-1] if task.transitions else None
    data: dict[str, Any] = {
        "task_id": task.id,
        "run_id": task.run_id,
        "state": task.state,
        "reason": last.reason if last else None,
        "target": {"type": task.target.type, "id": task.target.id},
        "binding_id": task.binding_id,
        "agent": task.agent,
        "event_id": task.event_id,
        "event_type": task.event_type,
        "attempts": task.attempts,
        "delivered": task.delivered,
    }
    if task.error is not None:
        data["error"] = {"code": task.error.code, "message": task.error.message}
    if task.check is not None:
        data["check"] = task.check
    if task.approval_id is not None:
        data["approval_id"] = task.approval_id
    summary = f"task {task.id} {task.state.replace('_', ' ')}" + (f": {last.reason}" if last and last.reason else "")
    return PlatformEventSignal(
        signal_id=f"task-{task.id}-{len(task.transitions)}",
        app=RUNNER_APP,
        instance=instance[:64] or "default",
        observed_at=now_iso(),
        type=f"task.{task.state}",
        summary=summary[:500],
        session_id=task.session_id,
        data=data,
        subject_kind="task",
        subject_id=task.id,
        synthetic=task.synthetic,
    )


def record_run(task: Task) -> None:
    """How long the task took, from its creation to this final state (`aurora.run.duration`)."""
    try:
        took = (datetime.fromisoformat(task.updated_at) - datetime.fromisoformat(task.created_at)).total_seconds()
    except ValueError:
        return
    metrics.run_duration.record(max(took, 0.0), {"agent": task.agent or f"{task.target.type}/{task.target.id}",
                                                 "state": task.state})


class TaskEvents:
    """`task.running` is sent without waiting for its ack (the run goes on at once); any other
    state — the one the run settles in, after which its message is acked — waits for its own ack
    and for every earlier one still out, so a run is never acked before its events are stored
    (or their failure logged). The events of one runner leave on one connection, in order."""

    def __init__(self, acks: AckedPublisher, subjects: Subjects, *, instance: str, timeout: float = 5.0) -> None:
        self._acks = acks
        self._subjects = subjects
        self._instance = instance
        self._timeout = timeout
        self._out: dict[asyncio.Future[int], Task] = {}

    async def publish(self, task: Task) -> None:
        """Best effort: the task in KV is the truth; an event lost here is logged, not retried
        forever (a resumed task publishes its latest transition again)."""
        if task.state in TERMINAL_STATES:
            record_run(task)
        try:
            ack = await send_signal(self._acks, self._subjects, task_signal(task, instance=self._instance))
        except Exception as exc:
            log.warning("task event not published", task=task.id, state=task.state, error=str(exc))
            return
        self._out[ack] = task
        if task.state != "running":
            await self.flush()

    async def flush(self) -> None:
        """Wait for the acks of every event sent so far (at most `timeout`); log what failed."""
        if not self._out:
            return
        out, self._out = self._out, {}
        await asyncio.wait(list(out), timeout=self._timeout)
        for ack, task in out.items():
            if not ack.done():
                ack.cancel()
                error = "no ack in time"
            elif ack.exception() is not None:
                error = str(ack.exception())
            else:
                continue
            log.warning("task event not published", task=task.id, state=task.state, error=error)
