"""Pure changes to a task: create, claim, move between states, record steps, ask to cancel.

Nothing here touches NATS; `tasks.TaskHandle` applies these with a compare-and-set. A task is
created `running` by the runner that took its run (the transitions show it queued first, in the
same write; it is stored at the run's first durable change, tasks/store.py); `queued` is where a
handed-back task or one resuming after an approval waits.
"""

from __future__ import annotations

from typing import Any

import msgspec

from shared.contracts.envelope import EventEnvelope
from shared.contracts.run import RunPayload
from shared.contracts.task import (
    TERMINAL_STATES,
    Task,
    TaskState,
    TaskStep,
    Transition,
    check_transition,
)


def new_task(run: RunPayload[EventEnvelope], event: EventEnvelope | None, *, runner: str, now: str,
             deliveries: int = 1) -> Task:
    """A run's task as its first attempt starts it. A run delivered again with no task stored is not
    a first attempt: the earlier ones stopped before their first durable change — after sending a
    write, maybe (a replayable run's write is claimed in the gateway's ledger, not in the task) —
    so `attempts` counts them: a write made again is then recovered as a resumed attempt's is, and
    a read made again gets a new call id (the audit keeps one record per call id)."""
    payload = event.payload if event is not None else None
    return Task(
        id=run.run_id,
        run_id=run.run_id,
        state="running",
        target=run.target,
        binding_id=run.binding_id,
        created_at=now,
        updated_at=now,
        agent=run.target.id if run.target.type == "agent" else None,
        event_id=event.header.message_id if event is not None else None,
        event_type=payload.type if payload is not None else None,
        session_id=payload.session_id if payload is not None else None,
        source_app=event.header.source.app if event is not None else None,
        synthetic=run.synthetic,
        delivery=run.delivery,
        # A large event stays in the Object Store: the task keeps the reference, not the bytes.
        event=event if run.event_ref is None else None,
        event_ref=run.event_ref,
        attempts=max(deliveries, 1),
        runner=runner,
        transitions=(
            Transition(to="queued", at=now, by=runner, reason="run received"),
            Transition(to="running", at=now, by=runner, reason="taken by a runner"),
        ),
    )


def claim(task: Task, *, runner: str, now: str) -> Task:
    """Take a task over: a queued or approved task starts running; a running task whose
    runner stopped (its run came back after the ack wait) is resumed from its step log."""
    if task.state == "running":
        reason = f"resumed after attempt {task.attempts} (runner {task.runner or '?'}) stopped"
        return msgspec.structs.replace(
            task, attempts=task.attempts + 1, runner=runner, updated_at=now,
            transitions=(*task.transitions, Transition(to="running", at=now, by=runner, reason=reason)),
        )
    check_transition(task.state, "running")
    return msgspec.structs.replace(
        task, state="running", attempts=task.attempts + 1, runner=runner, updated_at=now, approval_id=None,
        interaction_id=None,
        transitions=(*task.transitions, Transition(to="running", at=now, by=runner, reason="taken by a runner")),
    )


def transition(task: Task, to: TaskState, *, by: str, now: str, reason: str | None = None, **changes: Any) -> Task:
    """Move to `to` (IllegalTransition if the state machine forbids it), with field changes."""
    check_transition(task.state, to)
    return msgspec.structs.replace(
        task, state=to, updated_at=now,
        transitions=(*task.transitions, Transition(to=to, at=now, by=by, reason=reason)), **changes,
    )


def record_steps(task: Task, steps: list[TaskStep], *, now: str) -> Task:
    """Add steps to the log; a step with an id already there replaces it (started → finished)."""
    if not steps:
        return task
    log = list(task.steps)
    index = {step.id: i for i, step in enumerate(log)}
    for step in steps:
        if step.id in index:
            log[index[step.id]] = step
        else:
            index[step.id] = len(log)
            log.append(step)
    return msgspec.structs.replace(task, steps=tuple(log), updated_at=now)


class CancelOutcome(msgspec.Struct, frozen=True, kw_only=True):
    task: Task
    result: str  # cancelled | cancel_requested | already_terminal | already_requested


def request_cancel(task: Task, *, by: str, now: str, reason: str | None = None) -> CancelOutcome:
    """A waiting task is cancelled at once; a running one is asked to stop at its next step."""
    if task.state in TERMINAL_STATES:
        return CancelOutcome(task=task, result="already_terminal")
    why = reason or f"cancelled by {by}"
    if task.state in ("queued", "awaiting_approval"):
        cancelled = transition(task, "cancelled", by=by, now=now, reason=why, cancel_requested=by)
        return CancelOutcome(task=cancelled, result="cancelled")
    if task.cancel_requested is not None:
        return CancelOutcome(task=task, result="already_requested")
    return CancelOutcome(task=msgspec.structs.replace(task, cancel_requested=by, updated_at=now),
                         result="cancel_requested")
