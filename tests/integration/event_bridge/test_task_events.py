"""`task.*` events from the tasks bucket, with the bridge in-process against a real nats-server and
the runner's own `TaskStore` writing the revisions: each new transition becomes the event the
runner's signal used to be (same id, fields and trace); transitions written while no bridge ran,
the first revision compacted away, still become their events; a revision seen again (a new
bridge remembers nothing) stores no second event; a revision with no new transition (a step
recorded) makes none; a revision whose event could not be stored is redelivered and makes it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError
from nats.js.kv import KeyValue

from services.event_bridge.bridge import BridgeConfig
from services.event_bridge.task_events import TASK_EVENTS_DURABLE
from services.runner.tasks import statemachine
from services.runner.tasks.store import TaskHandle, TaskStore
from shared.clock import now_iso
from shared.contracts.subjects import Subjects
from shared.contracts.task import Task, TaskError, TaskStep
from shared.jetstream.streams import ensure_bucket, ensure_streams, events_stream, fabric_streams, tasks_bucket
from tests.harness.waiting import consumed, last_seq, poll
from tests.integration.event_bridge.helpers import running_bridge
from tests.unit.runner.factories import a_run, an_event


@pytest.fixture
async def tasks(nc: NATS, subjects: Subjects) -> AsyncIterator[tuple[TaskStore, KeyValue]]:
    js = nc.jetstream()
    await ensure_streams(js, fabric_streams(subjects))
    spec = tasks_bucket(subjects)
    kv = await ensure_bucket(js, spec)
    yield TaskStore(kv, js=js, bucket=spec.name), kv


async def task_events(js: JetStreamContext, subjects: Subjects) -> list[dict[str, Any]]:
    """Every `task.*` event stored, oldest first."""
    stream = events_stream(subjects).name
    info = await js.stream_info(stream)
    found: list[dict[str, Any]] = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1 if info.state.messages else 0):
        msg = await js.get_msg(stream, seq)
        if msg.subject and ".task." in msg.subject:
            found.append(json.loads(msg.data or b"{}"))
    return found


async def all_processed(js: JetStreamContext, subjects: Subjects) -> None:
    bucket = tasks_bucket(subjects).name
    stream = f"KV_{bucket}"

    async def made() -> bool:  # the bridge makes its durable once it has seen the bucket
        try:
            return bool(await js.consumer_info(stream, TASK_EVENTS_DURABLE))
        except NotFoundError:
            return False

    await poll(made, what="the bridge's tasks consumer")
    await consumed(js, stream, TASK_EVENTS_DURABLE, through=await last_seq(js, stream, f"$KV.{bucket}.>"),
                   what="the bridge's tasks consumer")


async def created(store: TaskStore, run_id: str) -> TaskHandle:
    task = statemachine.new_task(msgspec.structs.replace(a_run(), run_id=run_id), an_event(), runner="runner-7",
                                 now=now_iso())
    revision = await store.create(task)
    assert revision is not None
    return store.handle(task, revision)


def moved(to: str, reason: str, **changes: Any) -> Any:
    return lambda task: statemachine.transition(task, to, by="runner-7", now=now_iso(), reason=reason,  # type: ignore[arg-type]
                                                **changes)


def ids(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["header"]["message_id"], e["payload"]["type"]) for e in events]


async def test_each_new_transition_becomes_the_event_the_runner_signalled(
        nc: NATS, subjects: Subjects, tasks: tuple[TaskStore, KeyValue]) -> None:
    js, (store, _) = nc.jetstream(), tasks
    async with running_bridge(nc, subjects):
        handle = await created(store, "run-a")
        await poll(lambda: _count(js, subjects, 1), what="the task.running event")
        await handle.record(TaskStep(id="echo", kind="tool", name="echo.echo", status="finished",
                                     started_at=now_iso()))  # a step: no new transition, no event
        done: Task = await handle.update(moved("failed", "the tool failed", error=TaskError(code="tool_error",
                                                                                        message="no such city")))
        await all_processed(js, subjects)
    events = await task_events(js, subjects)
    assert ids(events) == [("task-run-a-2", "task.running"), ("task-run-a-3", "task.failed")]
    last = events[-1]
    assert last["header"]["source"] == {"app": "aurora.runner", "instance": "runner-7"}
    assert last["header"]["timestamp"] == done.transitions[-1].at
    assert last["payload"]["summary"] == "task run-a failed: the tool failed"
    assert last["payload"]["subject"] == {"kind": "task", "id": "run-a"}
    assert last["payload"]["session_id"] == done.session_id
    assert last["payload"]["data"] == {
        "task_id": "run-a", "run_id": "run-a", "state": "failed", "reason": "the tool failed",
        "target": {"type": done.target.type, "id": done.target.id}, "binding_id": done.binding_id,
        "agent": done.agent, "event_id": done.event_id, "event_type": done.event_type, "attempts": 1,
        "delivered": False, "error": {"code": "tool_error", "message": "no such city"},
    }


async def test_transitions_written_while_no_bridge_ran_still_become_their_events_once(
        nc: NATS, subjects: Subjects, tasks: tuple[TaskStore, KeyValue]) -> None:
    js, (store, kv) = nc.jetstream(), tasks
    async with running_bridge(nc, subjects):
        handle = await created(store, "run-b")
        await poll(lambda: _count(js, subjects, 1), what="the task.running event")
    # Two revisions while no bridge runs: the bucket keeps one, so the first is compacted away.
    await handle.update(moved("awaiting_approval", "waits for approval-1", approval_id="approval-1"))
    await handle.update(lambda task: statemachine.claim(task, runner="runner-7", now=now_iso()))
    stored = await kv.get("run-b")  # its last revision (a `history` read can miss an entry in flight)
    assert stored.value is not None and len(msgspec.json.decode(stored.value)["transitions"]) == 4
    async with running_bridge(nc, subjects):  # a new bridge: it remembers no task
        await all_processed(js, subjects)
        assert ids(await task_events(js, subjects)) == [
            ("task-run-b-2", "task.running"), ("task-run-b-3", "task.awaiting_approval"),
            ("task-run-b-4", "task.running")]
        # The same revision again (the bridge remembers the task now): nothing new.
        await handle.record(TaskStep(id="m1", kind="model", name="m", status="finished", started_at=now_iso()))
        await all_processed(js, subjects)
    async with running_bridge(nc, subjects):  # and again, to a bridge that remembers nothing
        await handle.record(TaskStep(id="m2", kind="model", name="m", status="finished", started_at=now_iso()))
        await all_processed(js, subjects)
    events = await task_events(js, subjects)
    assert ids(events) == [("task-run-b-2", "task.running"), ("task-run-b-3", "task.awaiting_approval"),
                           ("task-run-b-4", "task.running")]  # stored once each: JetStream dropped the copies
    waited = events[1]["payload"]
    assert waited["summary"] == "task run-b awaiting approval: waits for approval-1"
    assert waited["data"]["state"] == "awaiting_approval" and waited["data"]["attempts"] == 2


async def test_a_revision_carries_the_writers_trace_into_its_event(
        nc: NATS, subjects: Subjects, tasks: tuple[TaskStore, KeyValue]) -> None:
    """The runner writes its span's `traceparent` with the revision (tracing is off here, so the
    header is written by hand): the event continues it, as it continued the signal's."""
    js = nc.jetstream()
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    task = statemachine.new_task(msgspec.structs.replace(a_run(), run_id="run-c"), an_event(), runner="runner-7",
                                 now=now_iso())
    await js.publish(f"$KV.{tasks_bucket(subjects).name}.run-c", msgspec.json.encode(task),
                     headers={"traceparent": traceparent})
    async with running_bridge(nc, subjects):
        await all_processed(js, subjects)
    [event] = await task_events(js, subjects)
    assert event["header"]["trace"]["traceparent"] == traceparent


async def test_a_revision_whose_event_was_not_stored_is_redelivered_and_makes_it(
        nc: NATS, subjects: Subjects, tasks: tuple[TaskStore, KeyValue]) -> None:
    js, (store, _) = nc.jetstream(), tasks
    async with running_bridge(nc, subjects, BridgeConfig(backoff=(0.5, 0.5))) as bridge:
        await all_processed(js, subjects)  # its durable is made: the revision below is its
        await js.delete_stream(events_stream(subjects).name)  # no event can be stored now
        await created(store, "run-d")
        await poll(lambda: _retried(bridge.stats.retried), what="the failed publish retried")
        await ensure_streams(js, fabric_streams(subjects))
        await poll(lambda: _count(js, subjects, 1), what="the task.running event, from the redelivered revision")
        await all_processed(js, subjects)
    assert ids(await task_events(js, subjects)) == [("task-run-d-2", "task.running")]


async def _retried(count: int) -> bool:
    return count >= 1


async def _count(js: JetStreamContext, subjects: Subjects, count: int) -> bool:
    return len(await task_events(js, subjects)) >= count
