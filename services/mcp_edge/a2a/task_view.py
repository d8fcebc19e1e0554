"""An Aurora task as an A2A task (pure): the same id, its state said in A2A's words.

    queued              → submitted (working once it has run: a retry wait)
    running             → working
    awaiting_approval   → input-required, the status message asking the approval's question
    succeeded           → completed, the answer as the `answer` artifact
    unverified          → completed with a caveat: the status message says what to check
    partial             → failed, the status message says what was done and what to check
    failed              → failed, with the task's error
    cancelled           → canceled; rejected when an approval was denied

Never a silent success: a completed task whose outcome Aurora could not confirm says so in the
status message and in the metadata (`aurora.state`, `aurora.check`), and so do all the others.
"""

from __future__ import annotations

from typing import Any

from a2a.types.a2a_pb2 import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from google.protobuf.struct_pb2 import Struct

from shared.contracts.approval import Approval
from shared.contracts.task import Task as AuroraTask

A2A_STATE: dict[str, int] = {
    "queued": TaskState.TASK_STATE_SUBMITTED,
    "running": TaskState.TASK_STATE_WORKING,
    "awaiting_approval": TaskState.TASK_STATE_INPUT_REQUIRED,
    "succeeded": TaskState.TASK_STATE_COMPLETED,
    "unverified": TaskState.TASK_STATE_COMPLETED,
    "partial": TaskState.TASK_STATE_FAILED,
    "failed": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}
FINAL_STATES = frozenset({TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED,
                          TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED})
ARGUMENTS_SHOWN = 500


def context_of(task: AuroraTask) -> str:
    """The A2A context the message came in (kept in the event's data), else the task id."""
    if task.event is not None:
        context = task.event.payload.data.get("context_id")
        if isinstance(context, str) and context:
            return context
    return task.id


def state_of(task: AuroraTask) -> int:
    if task.state == "cancelled" and task.error is not None and task.error.code == "approval_denied":
        return TaskState.TASK_STATE_REJECTED
    if task.state == "queued" and task.attempts > 0:
        return TaskState.TASK_STATE_WORKING  # it ran and waits to go on (a retry, an approval granted)
    return A2A_STATE[task.state]


def approval_question(approval: Approval) -> str:
    arguments = str(approval.arguments)
    if len(arguments) > ARGUMENTS_SHOWN:
        arguments = arguments[:ARGUMENTS_SHOWN] + "…"
    return (f"Approve the {approval.side_effect} call {approval.tool} with {arguments}? "
            f"Approval {approval.id} is pending until {approval.expires_at}: "
            f"`aurora approvals grant {approval.id}` or `aurora approvals deny {approval.id}`.")


def interaction_question(task: AuroraTask) -> str:
    """The question the task waits to have answered (its waiting `interaction` step), with its options."""
    for step in reversed(task.steps):
        asked = step.structured if step.kind == "interaction" and step.status == "started" else None
        if isinstance(asked, dict) and asked.get("interaction_id") == task.interaction_id:
            options = [str(o.get("label", o) if isinstance(o, dict) else o) for o in asked.get("options") or ()]
            listed = f" Options: {', '.join(options)}." if options else ""
            return f"{asked.get('question')}{listed} (interaction {task.interaction_id})"
    return f"Waiting for an answer to the question the agent asked (interaction {task.interaction_id})."


def status_text(task: AuroraTask, approval: Approval | None) -> str | None:
    """What the status message says, or None when the state says it all (submitted, working,
    completed with a confirmed answer)."""
    if task.state == "awaiting_approval":
        if approval is not None:
            return approval_question(approval)
        if task.approval_id is not None:
            return f"Waiting for approval {task.approval_id}."
        return interaction_question(task)
    error = f"{task.error.code}: {task.error.message}" if task.error is not None else None
    if task.state == "unverified":
        return f"Completed, but not verified: {task.check or error or 'check the outcome'}"
    if task.state == "partial":
        return f"Partly done: {task.check or error or 'some steps did not finish'}"
    if task.state in ("failed", "cancelled"):
        last = task.transitions[-1].reason if task.transitions else None
        return error or last or f"the task was {task.state}"
    return None


def agent_message(task: AuroraTask, text: str) -> Message:
    return Message(message_id=f"{task.id}-status-{len(task.transitions)}", context_id=context_of(task),
                   task_id=task.id, role=Role.ROLE_AGENT, parts=[Part(text=text)])


def metadata_of(task: AuroraTask) -> Struct:
    metadata = Struct()
    shown: dict[str, Any] = {"aurora.state": task.state}
    if task.check:
        shown["aurora.check"] = task.check
    if task.error is not None:
        shown["aurora.error"] = {"code": task.error.code, "message": task.error.message}
    if task.approval_id and task.state == "awaiting_approval":
        shown["aurora.approval_id"] = task.approval_id
    metadata.update(shown)
    return metadata


def status_of(task: AuroraTask, approval: Approval | None) -> TaskStatus:
    status = TaskStatus(state=state_of(task))  # type: ignore[arg-type]
    status.timestamp.FromJsonString(_rfc3339(task.updated_at))
    text = status_text(task, approval)
    if text is not None:
        status.message.CopyFrom(agent_message(task, text))
    return status


def a2a_task(task: AuroraTask, approval: Approval | None = None) -> Task:
    shown = Task(id=task.id, context_id=context_of(task), status=status_of(task, approval), metadata=metadata_of(task))
    if task.state in ("succeeded", "unverified", "partial") and task.answer:
        shown.artifacts.append(Artifact(artifact_id=f"{task.id}-answer", name="answer", parts=[Part(text=task.answer)]))
    return shown


def status_event(task: AuroraTask, approval: Approval | None = None) -> TaskStatusUpdateEvent:
    return TaskStatusUpdateEvent(task_id=task.id, context_id=context_of(task), status=status_of(task, approval),
                                 metadata=metadata_of(task))


def _rfc3339(timestamp: str) -> str:
    """Aurora's timestamps end in `Z` or an offset; protobuf's parser wants one of them."""
    return timestamp if timestamp.endswith("Z") or "+" in timestamp[10:] or "-" in timestamp[10:] else timestamp + "Z"
