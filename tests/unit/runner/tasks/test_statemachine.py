"""The task state machine: legal moves only, claims count attempts, the log keeps one entry per step."""

from __future__ import annotations

import msgspec
import pytest

from services.runner.tasks import statemachine
from shared.contracts.task import (
    TASK_STATES,
    TERMINAL_STATES,
    TRANSITIONS,
    IllegalTransition,
    Task,
    check_transition,
    decode_task,
    encode_task,
)
from tests.unit.runner.factories import NOW, a_run, a_step, an_event


def a_task(state: str = "running") -> Task:
    task = statemachine.new_task(a_run(), an_event(), runner="r1", now=NOW)
    return msgspec.structs.replace(task, state=state)  # type: ignore[arg-type]


def test_a_new_task_is_running_for_the_runner_that_took_it_and_says_it_was_queued() -> None:
    task = statemachine.new_task(a_run(), an_event(), runner="r1", now=NOW)
    assert task.id == task.run_id == "run-1"
    assert (task.state, task.attempts, task.runner) == ("running", 1, "r1")
    assert [t.to for t in task.transitions] == ["queued", "running"]
    assert task.event_type == "message.received" and task.session_id == "g-1" and task.source_app == "im.polaris.qq"
    assert task.agent == "helper" and task.event is not None and task.delivery.reply_target is not None
    assert decode_task(encode_task(task)) == task


def test_the_table_covers_every_state_and_terminal_states_go_nowhere() -> None:
    assert set(TRANSITIONS) == set(TASK_STATES)
    for state in TERMINAL_STATES:
        assert TRANSITIONS[state] == frozenset()
    for state, targets in TRANSITIONS.items():
        assert state not in targets  # a state change is a change


@pytest.mark.parametrize("current", TASK_STATES)
@pytest.mark.parametrize("wanted", TASK_STATES)
def test_check_transition_follows_the_table(current: str, wanted: str) -> None:
    if wanted in TRANSITIONS[current]:  # type: ignore[index]
        check_transition(current, wanted)  # type: ignore[arg-type]
    else:
        with pytest.raises(IllegalTransition, match=f"a {current} task cannot become {wanted}"):
            check_transition(current, wanted)  # type: ignore[arg-type]


def test_transition_records_who_when_and_why_with_the_changes() -> None:
    done = statemachine.transition(a_task(), "succeeded", by="r1", now="later", reason="ok", answer="hi")
    assert done.state == "succeeded" and done.answer == "hi" and done.updated_at == "later"
    last = done.transitions[-1]
    assert (last.to, last.by, last.at, last.reason) == ("succeeded", "r1", "later", "ok")
    with pytest.raises(IllegalTransition):
        statemachine.transition(done, "running", by="r1", now="later")


def test_claiming_a_running_task_resumes_it_as_a_new_attempt() -> None:
    resumed = statemachine.claim(a_task(), runner="r2", now="later")
    assert (resumed.state, resumed.attempts, resumed.runner) == ("running", 2, "r2")
    assert "resumed after attempt 1 (runner r1)" in (resumed.transitions[-1].reason or "")


@pytest.mark.parametrize("state", ["queued", "awaiting_approval"])
def test_claiming_a_waiting_task_starts_it(state: str) -> None:
    claimed = statemachine.claim(msgspec.structs.replace(a_task(state), approval_id="apr-1"), runner="r2", now="t")
    assert (claimed.state, claimed.attempts, claimed.runner, claimed.approval_id) == ("running", 2, "r2", None)


@pytest.mark.parametrize("state", sorted(TERMINAL_STATES))
def test_a_finished_task_cannot_be_claimed(state: str) -> None:
    with pytest.raises(IllegalTransition):
        statemachine.claim(a_task(state), runner="r2", now="t")


def test_recording_a_step_again_replaces_it_in_place() -> None:
    task = statemachine.record_steps(a_task(), [a_step("a"), a_step("b", status="started", side_effect="write")],
                                     now="t1")
    task = statemachine.record_steps(task, [a_step("b", side_effect="write", classification="ok"), a_step("c")],
                                     now="t2")
    assert [(s.id, s.status) for s in task.steps] == [("a", "finished"), ("b", "finished"), ("c", "finished")]
    assert task.step("b") is not None and task.step("b").classification == "ok"  # type: ignore[union-attr]
    assert statemachine.record_steps(task, [], now="t3") is task


@pytest.mark.parametrize(("state", "result", "after"), [
    ("queued", "cancelled", "cancelled"),
    ("awaiting_approval", "cancelled", "cancelled"),
    ("running", "cancel_requested", "running"),
    ("succeeded", "already_terminal", "succeeded"),
    ("unverified", "already_terminal", "unverified"),
])
def test_cancel_stops_a_waiting_task_at_once_and_asks_a_running_one(state: str, result: str, after: str) -> None:
    outcome = statemachine.request_cancel(a_task(state), by="alice", now="t", reason=None)
    assert outcome.result == result and outcome.task.state == after
    if result != "already_terminal":
        assert outcome.task.cancel_requested == "alice"


def test_asking_twice_is_said_so() -> None:
    once = statemachine.request_cancel(a_task("running"), by="alice", now="t").task
    assert statemachine.request_cancel(once, by="bob", now="t").result == "already_requested"
