"""What an approval decision does to a task, whatever order things happened in: a decision that
beat the runner parking the task must come back, never be dropped."""

from __future__ import annotations

from datetime import UTC, datetime

from services.runner.tasks.approval_decisions import granted_reason, on_grant, on_refusal, task_may_come
from services.runner.tasks.statemachine import new_task, record_steps, transition
from shared.contracts.task import Task
from tests.unit.runner.factories import NOW, a_run, a_step, an_event


def running(*steps: object) -> Task:
    return record_steps(new_task(a_run(), an_event(), runner="r", now=NOW), list(steps), now=NOW)  # type: ignore[arg-type]


def asked(approval_id: str = "apr-1") -> Task:
    """Running: the gateway answered needs_approval and the runner recorded it, not parked yet."""
    return running(a_step("look", classification="ok"),
                   a_step("book", side_effect="write", classification="needs_approval", approval_id=approval_id))


def queued(task: Task) -> Task:
    """Handed back (its runner stopped): no call of it is in flight."""
    return transition(task, "queued", by="r", now=NOW, reason="handed back")


def parked(approval_id: str = "apr-1") -> Task:
    return transition(asked(approval_id), "awaiting_approval", by="r", now=NOW, approval_id=approval_id)


def granted(task: Task, approval_id: str = "apr-1") -> Task:
    return transition(task, "queued", by="ops", now=NOW, reason=f"{granted_reason(approval_id)} by ops at {NOW}")


def test_a_parked_task_is_decided_and_resumed() -> None:
    assert on_grant(parked(), "apr-1", redelivered=False) == "decide"
    assert on_grant(parked("apr-2"), "apr-1", redelivered=False) == "ignore"
    assert on_refusal(parked(), "apr-1") == "cancel"
    assert on_refusal(parked("apr-2"), "apr-1") == "ignore"


def test_a_decision_faster_than_the_parking_waits_for_it() -> None:
    assert on_grant(asked(), "apr-1", redelivered=False) == "wait"
    assert on_grant(asked(), "apr-1", redelivered=True) == "wait"  # still not parked: never take it over
    assert on_refusal(asked(), "apr-1") == "wait"


def test_a_decision_while_the_call_is_still_in_flight_waits_for_its_answer() -> None:
    in_flight = running(a_step("look", classification="ok"), a_step("book", status="started", side_effect="write"))
    assert on_grant(in_flight, "apr-1", redelivered=False) == "wait"
    assert on_refusal(in_flight, "apr-1") == "wait"


def test_a_grant_already_applied_is_resumed_only_when_its_resume_died() -> None:
    resumed = granted(parked())
    assert on_grant(resumed, "apr-1", redelivered=True) == "resume"  # the runner resuming it died
    assert on_grant(resumed, "apr-1", redelivered=False) == "ignore"  # a duplicate of the event
    assert on_refusal(resumed, "apr-1") == "ignore"


def test_a_grant_whose_resume_died_after_calling_the_step_again_is_resumed() -> None:
    claimed = transition(granted(parked()), "running", by="r2", now=NOW)
    for again in (a_step("book", status="started", side_effect="write", approval_id="apr-1"),  # outcome not written
                  a_step("book", side_effect="write", classification="ok", approval_id="apr-1")):  # written, not done
        called = record_steps(claimed, [again], now=NOW)
        assert on_grant(called, "apr-1", redelivered=True) == "resume", again  # r2 died: the event came again
        assert on_grant(called, "apr-1", redelivered=False) != "resume"  # r2 may be at it still
    assert on_grant(claimed, "apr-2", redelivered=True) == "wait"  # running: it may be asking for it


def test_a_task_that_moved_on_is_left_alone() -> None:
    done = transition(asked(), "succeeded", by="r", now=NOW)
    assert on_grant(done, "apr-1", redelivered=True) == "ignore"
    assert on_refusal(done, "apr-1") == "ignore"
    unrelated = queued(running(a_step("look", classification="ok")))
    assert on_grant(unrelated, "apr-1", redelivered=False) == "ignore"


def test_a_decision_for_a_running_task_with_nothing_in_flight_in_its_log_waits() -> None:
    """A playbook's first call of a write is not recorded `started`: the log of a task whose call
    the gateway answered needs_approval a moment ago may show nothing of it yet."""
    nothing_yet = running(a_step("look", classification="ok"))
    assert on_grant(nothing_yet, "apr-1", redelivered=False) == "wait"
    assert on_refusal(nothing_yet, "apr-1") == "wait"


def test_a_decision_for_a_task_not_stored_waits_a_minute_after_the_request() -> None:
    now = datetime(2026, 6, 19, 4, 0, tzinfo=UTC)
    assert task_may_come({"requested_at": "2026-06-19T03:59:30+00:00"}, now=now)
    assert task_may_come({"requested_at": "2026-06-19T11:59:30+08:00"}, now=now)  # another zone, same instant
    assert not task_may_come({"requested_at": "2026-06-19T03:58:50+00:00"}, now=now)  # gone: dropped
    assert not task_may_come({}, now=now) and not task_may_come({"requested_at": "soon"}, now=now)


def test_a_granted_write_that_found_its_target_unavailable_is_resumed_again_when_its_event_comes_back() -> None:
    resumed = granted(parked())
    claimed = transition(resumed, "running", by="r", now=NOW)
    unavailable = a_step("book", side_effect="write", classification="unavailable", approval_id="apr-1")
    waiting = transition(record_steps(claimed, [unavailable], now=NOW), "queued", by="r", now=NOW,
                         reason="waiting to retry step book")
    assert on_grant(waiting, "apr-1", redelivered=True) == "resume"  # the resumer nak'd it with the wait's delay
    assert on_refusal(waiting, "apr-1") == "ignore"
