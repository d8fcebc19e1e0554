"""Compare-and-set on the tasks bucket, with a real TaskStore on a real nats-server's KV: two
holds on one task, and the second writer's change after the first's. A runner that lost the
task (another took it over, or it is finished) gets `LostOwnership` and the stored task shows
only the winner's change; a mere concurrent edit of the same attempt (an operator's cancel
request) is re-applied on the fresh task instead, and neither change is lost."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

import msgspec
import pytest
from nats.aio.client import Client as NATS

from services.runner.errors import LostOwnership, TaskExists
from services.runner.tasks import statemachine
from services.runner.tasks.store import TaskHandle, TaskStore
from shared.contracts.subjects import Subjects
from shared.contracts.task import Task, TaskStep, decode_task
from shared.jetstream.streams import ensure_bucket, tasks_bucket
from tests.unit.runner.factories import NOW, a_run, an_event


@dataclass
class Stored:
    store: TaskStore
    nc: NATS
    bucket: str

    async def raw(self, task_id: str) -> tuple[Task, int]:
        """The task exactly as KV holds it (not through the store under test)."""
        entry = await (await self.nc.jetstream().key_value(self.bucket)).get(task_id)
        assert entry.value is not None and entry.revision is not None
        return decode_task(entry.value), entry.revision


@pytest.fixture
async def stored(nc: NATS, subjects: Subjects) -> AsyncIterator[Stored]:
    js = nc.jetstream()
    spec = tasks_bucket(subjects)
    kv = await ensure_bucket(js, spec)
    yield Stored(TaskStore(kv, js=js, bucket=spec.name), nc, spec.name)


async def _created(stored: Stored, run_id: str) -> tuple[Task, int]:
    task = statemachine.new_task(msgspec.structs.replace(a_run(), run_id=run_id), an_event(), runner="runner-a",
                                 now=NOW)
    revision = await stored.store.create(task)
    assert revision is not None
    return task, revision


def _step(step_id: str, by: str) -> TaskStep:
    return TaskStep(id=step_id, kind="tool", name="app.write", status="started", started_at=NOW,
                    side_effect="write", arguments={"by": by})


def _claim(runner: str) -> Callable[[Task], Task]:
    return lambda task: statemachine.claim(task, runner=runner, now=NOW)


def _finish(runner: str, answer: str) -> Callable[[Task], Task]:
    return lambda task: statemachine.transition(task, "succeeded", by=runner, now=NOW, answer=answer)


async def test_a_task_is_created_once_per_run_id(stored: Stored) -> None:
    task, revision = await _created(stored, "run-once")
    again = msgspec.structs.replace(task, runner="runner-b")
    assert await stored.store.create(again) is None
    kept, kept_revision = await stored.raw("run-once")
    assert kept.runner == "runner-a" and kept_revision == revision


async def test_the_old_holder_loses_a_task_another_runner_took_over(stored: Stored) -> None:
    task, revision = await _created(stored, "run-takeover")
    old: TaskHandle = stored.store.handle(task, revision)  # runner-a's attempt 1
    found = await stored.store.get(task.id)
    assert found is not None
    new = stored.store.handle(*found)  # its run came back: runner-b takes the task over
    await new.update(_claim("runner-b"))

    with pytest.raises(LostOwnership, match="attempt 2 of runner-b"):
        await old.record(_step("s1", "runner-a"))
    with pytest.raises(LostOwnership):
        await old.update(_finish("runner-a", "from a"))

    kept, kept_revision = await stored.raw(task.id)
    assert kept_revision == new.revision and old.revision == revision  # the loser wrote nothing
    assert (kept.attempts, kept.runner, kept.state) == (2, "runner-b", "running")
    assert kept.steps == () and kept.answer is None
    assert [t.to for t in kept.transitions] == ["queued", "running", "running"]

    await new.record(_step("s1", "runner-b"))  # the winner carries on undisturbed
    done = await new.update(_finish("runner-b", "from b"))
    kept, _ = await stored.raw(task.id)
    assert kept == done and kept.state == "succeeded" and kept.answer == "from b"
    assert [s.arguments for s in kept.steps] == [{"by": "runner-b"}]


async def test_two_runners_claiming_at_once_only_one_gets_the_task(stored: Stored) -> None:
    task, revision = await _created(stored, "run-race")
    handles = {runner: stored.store.handle(task, revision) for runner in ("runner-b", "runner-c")}
    outcomes = await asyncio.gather(*(h.update(_claim(r)) for r, h in handles.items()), return_exceptions=True)

    lost = [o for o in outcomes if isinstance(o, LostOwnership)]
    won = [o for o in outcomes if isinstance(o, Task)]
    assert len(lost) == 1 and len(won) == 1, outcomes
    kept, _ = await stored.raw(task.id)
    assert kept == won[0] and kept.attempts == 2  # claimed once, not twice
    assert kept.runner in handles and kept.transitions[-1].by == kept.runner


async def test_the_second_writer_of_a_finished_task_loses_it(stored: Stored) -> None:
    task, revision = await _created(stored, "run-finished")
    first, second = stored.store.handle(task, revision), stored.store.handle(task, revision)
    await first.update(_finish("runner-a", "first"))

    with pytest.raises(LostOwnership, match="succeeded"):
        await second.update(lambda t: statemachine.transition(t, "failed", by="runner-a", now=NOW))
    kept, _ = await stored.raw(task.id)
    assert kept.state == "succeeded" and kept.answer == "first" and kept == first.task
    # The loser wrote no revision, so no transition of its becomes a task event (the bridge's).
    assert [t.to for t in kept.transitions] == ["queued", "running", "succeeded"]


async def test_a_cancel_request_written_meanwhile_is_kept_not_lost(stored: Stored) -> None:
    task, revision = await _created(stored, "run-cancel")
    handle = stored.store.handle(task, revision)
    outcome = await stored.store.change(task.id, lambda t: statemachine.request_cancel(t, by="ops", now=NOW).task)
    assert outcome is not None and outcome.cancel_requested == "ops"

    # same attempt, same runner: the conflict is resolved by writing again on the fresh task
    written = await handle.record(_step("s1", "runner-a"))
    kept, kept_revision = await stored.raw(task.id)
    assert kept == written and kept_revision == handle.revision == revision + 2
    assert kept.cancel_requested == "ops" and [s.id for s in kept.steps] == ["s1"]
    assert handle.cancel_requested == "ops"


async def test_a_deleted_task_is_lost_to_its_holder(stored: Stored) -> None:
    task, revision = await _created(stored, "run-deleted")
    handle = stored.store.handle(task, revision)
    await (await stored.nc.jetstream().key_value(stored.bucket)).delete(task.id)
    with pytest.raises(LostOwnership):
        await handle.record(_step("s1", "runner-a"))


def _new(run_id: str, runner: str) -> Task:
    return statemachine.new_task(msgspec.structs.replace(a_run(), run_id=run_id), an_event(), runner=runner, now=NOW)


async def test_a_new_runs_task_is_written_at_its_first_durable_change(stored: Stored) -> None:
    """Taking a run writes nothing; the first durable change creates the task, staged steps in it."""
    handle = stored.store.unstored(_new("run-lazy", "runner-a"))
    handle.stage(TaskStep(id="read", kind="tool", name="app.read", status="finished", started_at=NOW,
                          side_effect="read", classification="ok"))
    assert not handle.stored and await stored.store.get("run-lazy") is None
    await handle.poll()  # nothing to poll yet, and no error for it

    written = await handle.record(_step("s1", "runner-a"))
    kept, kept_revision = await stored.raw("run-lazy")
    assert handle.stored and kept == written and kept_revision == handle.revision
    assert [(s.id, s.status) for s in kept.steps] == [("read", "finished"), ("s1", "started")]
    done = await handle.update(_finish("runner-a", "done"))
    assert (await stored.raw("run-lazy"))[0] == done and done.state == "succeeded"


async def test_two_attempts_of_a_run_not_stored_yet_meet_at_the_create(stored: Stored) -> None:
    """Its run came back while the first attempt still ran, before either stored the task: the
    one that writes second learns the task is there (TaskExists) and wrote nothing of its own."""
    first = stored.store.unstored(_new("run-twice", "runner-a"))
    second = stored.store.unstored(_new("run-twice", "runner-b"))
    await first.record(_step("s1", "runner-a"))

    with pytest.raises(TaskExists, match="another attempt"):
        await second.update(_finish("runner-b", "from b"))
    kept, kept_revision = await stored.raw("run-twice")
    assert kept.runner == "runner-a" and kept.state == "running" and kept_revision == first.revision
    assert not second.stored and [s.arguments for s in kept.steps] == [{"by": "runner-a"}]


async def test_a_watch_and_the_run_storing_the_task_at_once_make_one_create(stored: Stored) -> None:
    """The watch (tasks/watch.py) stores a slow run's task while the run itself writes: one attempt's
    writes take turns, so neither is refused as another attempt's."""
    handle = stored.store.unstored(_new("run-shown", "runner-a"))
    shown, recorded = await asyncio.gather(handle.update(lambda task: task), handle.record(_step("s1", "runner-a")))
    kept, _ = await stored.raw("run-shown")
    assert kept == handle.task and [s.id for s in kept.steps] == ["s1"] and shown.runner == recorded.runner
