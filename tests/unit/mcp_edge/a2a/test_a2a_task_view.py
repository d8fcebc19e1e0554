"""Each Aurora task state said in A2A's words, never a silent success."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.types.a2a_pb2 import TaskState

from services.mcp_edge.a2a.task_view import a2a_task, status_event
from shared.contracts.approval import Approval
from shared.contracts.envelope import EventEnvelope, EventPayload, Header, Source
from shared.contracts.run import RunTarget
from shared.contracts.task import Task, TaskError, TaskStep, Transition

AT = "2026-12-05T21:00:00Z"


def task(state: str, **extra: Any) -> Task:
    event = EventEnvelope(header=Header(method="aurora/event", message_id="e1", timestamp=AT,
                                        source=Source(app="aurora.edge")),
                          payload=EventPayload(type="a2a.message.received", data={"context_id": "ctx-1"}))
    fields: dict[str, Any] = {"id": "t1", "run_id": "t1", "state": state, "target": RunTarget(type="agent", id="a"),
                              "binding_id": "b", "created_at": AT, "updated_at": AT, "event": event,
                              "transitions": (Transition(to=state, at=AT, by="r", reason="why not"),)}  # type: ignore[arg-type]
    fields.update(extra)
    return Task(**fields)


def text_of(shown: Any) -> str:
    return "".join(part.text for part in shown.status.message.parts)


@pytest.mark.parametrize(("state", "attempts", "wanted"), [
    ("queued", 0, TaskState.TASK_STATE_SUBMITTED),
    ("queued", 1, TaskState.TASK_STATE_WORKING),
    ("running", 1, TaskState.TASK_STATE_WORKING),
    ("failed", 1, TaskState.TASK_STATE_FAILED),
    ("cancelled", 1, TaskState.TASK_STATE_CANCELED),
])
def test_states(state: str, attempts: int, wanted: int) -> None:
    shown = a2a_task(task(state, attempts=attempts))
    assert shown.status.state == wanted
    assert shown.id == "t1" and shown.context_id == "ctx-1"
    assert shown.metadata["aurora.state"] == state


def test_a_success_carries_its_answer_as_an_artifact() -> None:
    shown = a2a_task(task("succeeded", answer="42 pumps"))
    assert shown.status.state == TaskState.TASK_STATE_COMPLETED
    assert not shown.status.HasField("message")
    assert [p.text for p in shown.artifacts[0].parts] == ["42 pumps"]


def test_unverified_is_completed_with_its_check_said() -> None:
    shown = a2a_task(task("unverified", answer="sent", check="look whether order 7 exists"))
    assert shown.status.state == TaskState.TASK_STATE_COMPLETED
    assert "not verified" in text_of(shown) and "look whether order 7 exists" in text_of(shown)
    assert shown.metadata["aurora.check"] == "look whether order 7 exists"


def test_partial_is_failed_with_its_check_said() -> None:
    shown = a2a_task(task("partial", check="step 2 of 3 done"))
    assert shown.status.state == TaskState.TASK_STATE_FAILED
    assert "step 2 of 3 done" in text_of(shown)


def test_a_denied_approval_is_rejected() -> None:
    error = TaskError(code="approval_denied", message="approval ap1 denied by ops")
    shown = a2a_task(task("cancelled", error=error))
    assert shown.status.state == TaskState.TASK_STATE_REJECTED
    assert "denied by ops" in text_of(shown)


def test_an_expired_approval_is_cancelled_not_rejected() -> None:
    shown = a2a_task(task("cancelled", error=TaskError(code="approval_expired", message="nobody decided")))
    assert shown.status.state == TaskState.TASK_STATE_CANCELED


def test_awaiting_approval_asks_the_approvals_question() -> None:
    approval = Approval(id="ap1", tool="echo.counter_increment", args_hash="h", task_id="t1",
                        arguments={"key": "k"}, requested_at=AT, expires_at="2026-12-05T22:00:00Z")
    waiting = task("awaiting_approval", approval_id="ap1", attempts=1)
    shown = a2a_task(waiting, approval)
    assert shown.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    question = text_of(shown)
    assert "echo.counter_increment" in question and "aurora approvals grant ap1" in question
    assert shown.metadata["aurora.approval_id"] == "ap1"
    assert status_event(waiting, approval).status.state == TaskState.TASK_STATE_INPUT_REQUIRED


def test_awaiting_an_answer_asks_the_agents_question() -> None:
    step = TaskStep(id="pick", kind="interaction", name="ask", status="started", started_at=AT,
                    structured={"interaction_id": "i1", "question": "Which pump?",
                                "options": [{"label": "P-101"}, {"label": "P-102"}]})
    shown = a2a_task(task("awaiting_approval", interaction_id="i1", steps=(step,), attempts=1))
    assert shown.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert text_of(shown) == "Which pump? Options: P-101, P-102. (interaction i1)"
