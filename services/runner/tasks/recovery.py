"""What to do with each step of a resumed task's log (pure; unit-tested on their own).

- finished or skipped: reuse its recorded outcome, never run it again;
- started, but safe to repeat (a read, a model call, a stage): run it again;
- started write (or delivery) without a recorded outcome: its call may or may not have happened.
  Ask the gateway again under the same call id (its call ledger answers with the recorded result,
  runs a call it never received, or — for a target that deduplicates — sends it again under the
  same idempotency key); when the gateway cannot tell (`call_in_doubt`) or does not answer, look
  for its audit record of that call id, then the step's read-back (`verify`); only when none
  knows, the task becomes `unverified`, saying what to check. Such a step is never called again
  under a new id.

A replayable run's write (a playbook's, a pipeline's text stage's) is not recorded `started`: its
first call has the same call id in every attempt (`tools.client.step_call_id`), so it is not in the
log at all when its runner died before the task's next change. The resumed attempt makes it again
under that id and the ledger answers; when that answer is not the call's outcome
(`not_settled`: the gateway cannot tell, or `call_id_reused` — an earlier attempt sent the call
with other arguments) it goes the way of a started write above, the audit scanned from the start
of the first attempt that ended without a word (`earlier_attempts_began`), or straight to
`unverified` with `arguments_differ_check` for other arguments.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

import msgspec

from services.runner.steps.results import business_ids
from shared.contracts.audit import AuditRecord
from shared.contracts.task import StepError, Task, TaskStep
from shared.contracts.toolcall import ToolCallResult

Action = Literal["run", "reuse", "repeat", "look_up"]


def action_for(step: TaskStep | None) -> Action:
    if step is None:
        return "run"
    if step.done:
        return "reuse"
    if step.kind in ("model", "stage", "verify"):
        return "repeat"
    if step.kind == "tool" and step.side_effect == "read":
        return "repeat"
    return "look_up"


def waiting_for_approval(task: Task) -> TaskStep | None:
    """The step an `awaiting_approval` task waits on: the last one the gateway answered
    `needs_approval` with the task's approval id. Resuming the task with
    `{step.id: approval_id}` calls that step's tool again, with the approval."""
    if task.state != "awaiting_approval":
        return None
    for step in reversed(task.steps):
        if step.classification == "needs_approval" and step.approval_id == task.approval_id:
            return step
    return None


def pending_lookups(task: Task) -> list[TaskStep]:
    """The started side-effecting steps with no recorded outcome."""
    return [step for step in task.steps if action_for(step) == "look_up"]


LOST = "the runner stopped before its outcome was recorded and the gateway audit has no record of the call"
# A replayable run's write found unrecorded by a resumed attempt (nothing in the step log says
# whether an earlier attempt sent it), and the gateway could not answer for its call id.
EARLIER_ATTEMPT = ("an earlier attempt of this task may have sent it before its runner stopped, and neither the "
                   "gateway's call ledger nor its audit has the outcome of the call")
ASKED_AGAIN = "outcome not recorded before a crash; recovered by asking the gateway again for call {call_id}"
# The gateway's answers that say nothing of the call's outcome (see services.runner.tools.client).
_UNANSWERED = {"no_gateway", "no_reply", "call_in_doubt", "call_in_progress", "bad_reply", "internal_error",
               "ledger_unavailable"}


def unanswered(result: ToolCallResult) -> bool:
    """Asked again, the gateway could not say what became of the call."""
    return result.error is not None and result.error.code in _UNANSWERED and result.status != "ok"


def not_settled(result: ToolCallResult) -> bool:
    """A resumed attempt's write made again under its first call's id: the gateway's answer is not
    its outcome — it could not tell (`unanswered`), or the call id holds a call with other arguments."""
    return unanswered(result) or (result.error is not None and result.error.code == "call_id_reused")


def doubt_of(result: ToolCallResult) -> str | None:
    """The gateway's own words when it knows the call was executing and cannot tell more."""
    if result.error is not None and result.error.code == "call_in_doubt":
        return f"the gateway answered: {result.error.message}"
    return None


def unverified_check(step: TaskStep, *, reason: str = LOST, system: str | None = None) -> str:
    """The sentence a person reads on an unverified task: what to check, where, and why."""
    arguments = json.dumps(step.arguments or {}, ensure_ascii=False, sort_keys=True, default=str)
    what = "the reply" if step.kind == "delivery" else step.name
    where = f" in {system}" if system else ""
    return (
        f"check{where} whether {what} was carried out with arguments {arguments} "
        f"(step {step.id}, call {step.call_id or '?'}, started {step.started_at}): {reason}; "
        "it was not repeated"
    )


OTHER_ARGUMENTS = "an earlier attempt made this call with other arguments; not made again"


def arguments_differ_check(step: TaskStep, answer: ToolCallResult) -> str:
    """The sentence for a resumed attempt's write that the gateway refused as `call_id_reused`: an
    earlier attempt sent the same step's call with other arguments (its reads answered otherwise)."""
    what = "the reply" if step.kind == "delivery" else step.name
    arguments = json.dumps(step.arguments or {}, ensure_ascii=False, sort_keys=True, default=str)
    said = f" (the gateway answered: {answer.error.message})" if answer.error is not None else ""
    return (
        f"check what {what} an earlier attempt of this task sent (step {step.id}, call {step.call_id or '?'}: "
        f"`aurora audit tail --from-start` lists it under that call id, with its arguments and result): "
        f"it was sent with other arguments than this attempt's {arguments}{said}; it was not sent again"
    )


def earlier_attempts_began(task: Task, *, event_at: str) -> str:
    """Since when a write the step log does not have may have been sent by an earlier attempt:
    the start of the first of the attempts in a row that ended without a word (each resumed
    `running` after `running`) — or, when attempts left no transition at all (a run delivered
    again whose task was never stored), the event's time (`event_at`), or the task's creation if
    that is earlier. Any change the task recorded before carried what its attempt had done;
    earlier than the call is safe for the audit scan, only slower."""
    transitions = task.transitions
    if sum(1 for t in transitions if t.to == "running") < task.attempts or not transitions:
        return min(event_at, task.created_at, key=_instant)
    first = len(transitions) - 1
    while first > 0 and transitions[first - 1].to == "running":
        first -= 1
    return transitions[first].at


def _instant(at: str) -> datetime:
    """A time to compare; one that cannot be read is never the earlier (a naive one is UTC)."""
    try:
        parsed = datetime.fromisoformat(at)
    except ValueError:
        return datetime.max.replace(tzinfo=UTC)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def from_audit(step: TaskStep, record: AuditRecord) -> TaskStep:
    """A started write finished with what the gateway audited for its call. The audit keeps a
    summary of the result (at most 512 characters, secret fields redacted): when that summary
    is a whole JSON object it is the structured result later steps and the answer read, and
    the business ids in it are kept as for a write that finished normally."""
    error = StepError(code=record.error_code, message=record.error_message or "") if record.error_code else None
    structured = structured_summary(record.output_summary)
    return msgspec.structs.replace(
        step, status="finished", finished_at=record.at, classification=record.status,  # type: ignore[arg-type]
        error=error, approval_id=record.approval_id or step.approval_id, text=record.output_summary or None,
        structured=structured, business_ids=business_ids(structured) if structured is not None else {},
        note=f"outcome not recorded before a crash; recovered from the gateway audit of call {record.call_id}",
    )


def structured_summary(summary: str) -> dict[str, Any] | None:
    """The audited result as an object, or None (a truncated summary, or content blocks)."""
    try:
        value = json.loads(summary)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
