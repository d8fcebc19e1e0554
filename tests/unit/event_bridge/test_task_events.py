"""`task.*` events from task revisions (services/event_bridge/task_events.py): which transitions are
due, remembered or not, and the signal each one is."""

from __future__ import annotations

from datetime import datetime

from nats.aio.msg import Msg

from services.event_bridge.task_events import Events, TaskEventMaker, task_signal
from services.runner.tasks.statemachine import claim, new_task, transition
from shared.contracts.task import Task, encode_task
from tests.unit.runner.factories import NOW, a_run, an_event

LATER = "2026-06-19T12:05:00+08:00"


def _message(task: Task, headers: dict[str, str] | None = None) -> Msg:
    return Msg(None, subject=f"$KV.AMP_TASKS.{task.id}", data=encode_task(task), headers=headers)  # type: ignore[arg-type]


def _maker(now: str = LATER) -> TaskEventMaker:
    return TaskEventMaker(duplicate_window=600, clock=lambda: datetime.fromisoformat(now).timestamp())


def _ids(result: object) -> list[str]:
    assert isinstance(result, Events), result
    return [event.header.message_id for event in result.events]


def test_a_task_event_is_fixed_by_task_and_transition() -> None:
    task = new_task(a_run(), an_event(), runner="r1", now=NOW)
    first = task_signal(task)
    assert first.type == "task.running" and first.signal_id == f"task-{task.id}-2" and first.instance == "r1"
    assert first.app == "aurora.runner" and first.subject_kind == "task" and first.subject_id == task.id
    assert first.session_id == "g-1" and first.data["target"] == {"type": "agent", "id": "helper"}
    assert first.observed_at == NOW
    done = transition(task, "unverified", by="r1", now=LATER, reason="lost", check="look at X")
    second = task_signal(done)
    assert second.type == "task.unverified" and second.data["check"] == "look at X" and second.observed_at == LATER
    assert second.signal_id != first.signal_id
    # An earlier transition from the later revision: its own state, reason and time, no check.
    again = task_signal(done, 2)
    assert (again.signal_id, again.type, again.observed_at) == (first.signal_id, "task.running", NOW)
    assert again.data["reason"] == "taken by a runner" and "check" not in again.data


def test_a_remembered_task_gets_the_events_of_its_new_transitions_only() -> None:
    maker = _maker()
    task = new_task(a_run(), an_event(), runner="r1", now=NOW)
    created = maker.convert(_message(task))
    assert _ids(created) == ["task-run-1-2"]  # the create's `queued` is no event
    assert maker.stored_count("run-1") is None  # not yet: its publish is not acknowledged
    assert isinstance(created, Events)
    created.stored()
    assert maker.stored_count("run-1") == 2
    assert maker.convert(_message(task)) is None  # the same revision again, or a step recorded
    waiting = transition(task, "awaiting_approval", by="r1", now=NOW, approval_id="a-1")
    back = claim(waiting, runner="r1", now=NOW)
    assert _ids(maker.convert(_message(back))) == ["task-run-1-3", "task-run-1-4"]


def test_a_task_not_remembered_gets_its_latest_event_and_the_recent_earlier_ones() -> None:
    task = new_task(a_run(), an_event(), runner="r1", now=NOW)
    waiting = transition(task, "awaiting_approval", by="r1", now=NOW, approval_id="a-1")
    back = claim(waiting, runner="r1", now=LATER)
    assert _ids(_maker(LATER).convert(_message(back))) == ["task-run-1-2", "task-run-1-3", "task-run-1-4"]
    # An hour on, only the latest: the earlier ones' copies are past the duplicate window.
    assert _ids(_maker("2026-06-19T13:05:00+08:00").convert(_message(back))) == ["task-run-1-4"]


def test_deletes_and_purges_make_no_event_and_an_unreadable_task_is_rejected() -> None:
    task = new_task(a_run(), an_event(), runner="r1", now=NOW)
    maker = _maker()
    for op in ("DEL", "PURGE"):
        assert maker.convert(_message(task, {"KV-Operation": op})) is None
    unreadable = Msg(None, subject="$KV.AMP_TASKS.x", data=b"{nope", headers=None)  # type: ignore[arg-type]
    rejected = maker.convert(unreadable)
    assert not isinstance(rejected, Events) and rejected is not None and "malformed task" in rejected.reason


def test_the_memory_is_bounded_oldest_first() -> None:
    maker = TaskEventMaker(duplicate_window=600, remembered=2)
    for task_id in ("a", "b", "c"):
        maker.remember(task_id, 2)
    assert [maker.stored_count(t) for t in ("a", "b", "c")] == [None, 2, 2]
    maker.remember("b", 1)  # never fewer than already known
    assert maker.stored_count("b") == 2
