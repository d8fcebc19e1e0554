"""What a user's answer does to the task whose question it answers, whatever order things
happened in: an answer that beat the runner parking the task must come back, never be dropped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from services.runner.tasks.interactions import answered_step, interaction_id_for, on_answer, waiting_step
from services.runner.tasks.statemachine import new_task, record_steps, transition
from shared.contracts.task import Task
from tests.unit.runner.factories import NOW, a_run, a_step, an_event

ANSWERED_AT = "2026-06-19T04:00:00+00:00"
SOON = datetime(2026, 6, 19, 4, 0, 2, tzinfo=UTC)  # two seconds after the answer
LATE = SOON + timedelta(minutes=2)
STEP = "pick"


def running() -> Task:
    """Running: the lookups done, the question maybe out, the wait not stored yet."""
    return record_steps(new_task(a_run(), an_event(), runner="r", now=NOW), [a_step("look")], now=NOW)


def parked(task: Task | None = None) -> Task:
    task = task or running()
    interaction_id = interaction_id_for(task.id, STEP)
    waiting = waiting_step(STEP, interaction_id, "which one?", ["A", "B"])
    return transition(record_steps(task, [waiting], now=NOW), "awaiting_approval", by="r", now=NOW,
                      interaction_id=interaction_id)


def answered(task: Task, value: str = "2") -> Task:
    """The answer recorded and the task queued to resume (by the resumer), with its runner gone."""
    waiting = task.step(STEP)
    assert waiting is not None
    done = answered_step(waiting, value, by="user u1", at=ANSWERED_AT)
    return transition(record_steps(task, [done], now=NOW), "queued", by="user u1", now=NOW, reason="answered")


def decide(task: Task | None, value: str = "2", *, redelivered: bool = False, now: datetime = SOON) -> str:
    task_id = task.id if task is not None else running().id
    return on_answer(task, STEP, interaction_id_for(task_id, STEP), value, answered_at=ANSWERED_AT,
                     redelivered=redelivered, now=now)


def test_a_parked_task_records_the_answer() -> None:
    assert decide(parked()) == "record"
    assert decide(parked(), redelivered=True) == "record"  # it had waited for the parking


def test_an_answer_faster_than_the_parking_comes_back_for_a_minute() -> None:
    assert decide(None) == "wait"  # the task not stored yet: its first durable change is the wait
    assert decide(running()) == "wait"  # stored, the question out, the wait not yet
    assert decide(running(), redelivered=True) == "wait"  # never taken over before it parked
    assert decide(None, now=LATE) == "ignore" and decide(running(), now=LATE) == "ignore"


def test_an_answer_recorded_is_resumed_again_only_when_its_own_resume_died() -> None:
    resumed = answered(parked())
    assert decide(resumed, redelivered=True) == "resume"  # this answer, its runner stopped mid-resume
    assert decide(resumed, redelivered=False) == "ignore"  # a duplicate of the event
    assert decide(resumed, "1", redelivered=True) == "ignore"  # another answer, which waited meanwhile


def test_an_answer_to_a_task_that_moved_on_or_to_no_question_is_ignored() -> None:
    finished = transition(transition(answered(parked()), "running", by="r", now=NOW), "succeeded", by="r", now=NOW)
    assert decide(finished, redelivered=True) == "ignore"
    not_a_question = record_steps(running(), [a_step(STEP)], now=NOW)
    assert decide(not_a_question) == "ignore"
    other = transition(running(), "awaiting_approval", by="r", now=NOW, approval_id="apr-1")
    assert decide(other) == "ignore"  # parked on an approval, not on this question
