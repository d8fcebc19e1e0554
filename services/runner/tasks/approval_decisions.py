"""What an approval's decision does to the task that asked for it: pure rules over the task as
stored, so a decision delivered twice, early or late is one outcome (the resumer acts on them)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from shared.clock import parse_iso
from shared.contracts.task import Task, TaskStep

GrantAction = Literal["decide", "resume", "wait", "ignore"]
# Seconds after an approval was requested within which the task that asked for it is stored: the
# runner parks it as soon as the gateway answers, and a run is stored within a second anyway
# (services/runner/tasks/watch.py); a minute leaves room for a slow machine.
TASK_STORED_WITHIN = 60.0
RefusalAction = Literal["cancel", "wait", "ignore"]


def granted_reason(approval_id: str) -> str:
    """How the transition that applies a grant begins (`on_grant` looks for it)."""
    return f"approval {approval_id} granted"


def on_grant(task: Task, approval_id: str, *, redelivered: bool) -> GrantAction:
    """What an `approval.granted` event does to a task:

    - decide: it waits for this approval — mark it decided and resume it;
    - resume: the grant was applied but the runner resuming it died (the event came again);
    - wait: the task asked for this approval and has not parked yet (the decision was faster
      than the runner writing `awaiting_approval`): the event must come back, not be dropped;
    - ignore: anything else (another approval, a task that moved on, a duplicate event).
    """
    if waiting_step(task, approval_id) is None:
        if redelivered and task.state in ("queued", "running") and _grant_applied(task, approval_id) \
                and granted_step(task, approval_id) is not None:
            return "resume"  # its resuming runner died after calling the step again with the grant
        return "wait" if _asking(task) else "ignore"
    if task.state == "awaiting_approval":
        return "decide" if task.approval_id == approval_id else "ignore"
    if task.state not in ("queued", "running"):
        return "ignore"
    if _grant_applied(task, approval_id):
        return "resume" if redelivered else "ignore"
    return "wait"


def on_refusal(task: Task, approval_id: str) -> RefusalAction:
    """What `approval.denied` / `approval.expired` does: cancel the task waiting for it, or
    wait for a task that asked for it but has not parked yet."""
    if task.state == "awaiting_approval":
        return "cancel" if task.approval_id == approval_id else "ignore"
    if task.state in ("queued", "running") and waiting_step(task, approval_id) is not None \
            and not _grant_applied(task, approval_id):
        return "wait"
    return "wait" if _asking(task) else "ignore"


def _asking(task: Task) -> bool:
    """A running task may have a call in flight that is about to record that it needs this
    approval (the gateway created it; the runner has not written the answer yet). Its step log
    cannot tell: a playbook's or a pipeline's first call of a write is not recorded `started`
    (services/runner/steps/tool_steps.py), so any running task may be asking."""
    return task.state == "running"


def task_may_come(approval: dict[str, Any], *, now: datetime) -> bool:
    """A decision for a task that is not stored: the run that asked may not have stored it yet (a
    new run's task is written at its first durable change, and a playbook's write may go out
    before it). It waits (comes back) for `TASK_STORED_WITHIN` seconds after the approval was
    requested; a task still not there is gone, and the decision is dropped."""
    requested = approval.get("requested_at")
    return isinstance(requested, str) and within_task_stored(requested, now=now)


def within_task_stored(at: str, *, now: datetime) -> bool:
    """`now` is less than `TASK_STORED_WITHIN` seconds after `at` (an ISO time; unreadable: no)."""
    try:
        when = parse_iso(at)
    except ValueError:
        return False
    when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
    return (now - when).total_seconds() < TASK_STORED_WITHIN


def _grant_applied(task: Task, approval_id: str) -> bool:
    return any(t.to == "queued" and (t.reason or "").startswith(granted_reason(approval_id)) for t in task.transitions)


def waiting_step(task: Task, approval_id: str) -> TaskStep | None:
    for step in reversed(task.steps):
        # unavailable: the granted call found its target gone, and the task waits to call again
        if step.approval_id == approval_id and step.classification in ("needs_approval", "unavailable"):
            return step
    return None


def granted_step(task: Task, approval_id: str) -> TaskStep | None:
    """The step a grant is for: still waiting for it, or already called again with it (`started`,
    or finished) by a runner that resumed the task."""
    return waiting_step(task, approval_id) or next(
        (step for step in reversed(task.steps) if step.approval_id == approval_id), None)
