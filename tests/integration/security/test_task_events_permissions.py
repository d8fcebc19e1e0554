"""`task.*` events from the tasks bucket under deploy/nats-auth.conf, each service as its own user:
the runner writes its task (and so its transitions) with its own rights, the bridge started
before the bucket existed waits for it, makes its durable `event-bridge-tasks` and stores the
task's events with no violation; and the bridge may not write a task itself."""

from __future__ import annotations

import json

import msgspec
from nats.aio.client import Client as NATS

from services.event_bridge.bridge import EventBridge
from services.runner.tasks import statemachine
from services.runner.tasks.store import TaskStore
from shared.clock import now_iso
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_bucket, ensure_streams, events_stream, fabric_streams, tasks_bucket
from tests.harness.secure_nats import Connect
from tests.harness.waiting import poll
from tests.integration.event_bridge.helpers import running_bridge
from tests.unit.runner.factories import a_run, an_event

SUBJECTS = Subjects("amp")


async def _task_event_ids(nc: NATS) -> list[str]:
    js = nc.jetstream()
    info = await js.stream_info(events_stream(SUBJECTS).name)
    ids = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1 if info.state.messages else 0):
        msg = await js.get_msg(events_stream(SUBJECTS).name, seq)
        if msg.subject and ".task." in msg.subject:
            ids.append(json.loads(msg.data or b"{}")["header"]["message_id"])
    return ids


async def test_the_bridge_makes_a_runners_task_events_with_its_own_rights(connect: Connect) -> None:
    bridge, runner, operator = await connect("event-bridge"), await connect("runner"), await connect("operator")
    await ensure_streams(bridge.nc.jetstream(), fabric_streams(SUBJECTS))
    async with running_bridge(bridge.nc, SUBJECTS) as running:
        assert isinstance(running, EventBridge)
        rjs = runner.nc.jetstream()
        spec = tasks_bucket(SUBJECTS)
        store = TaskStore(await ensure_bucket(rjs, spec), js=rjs, bucket=spec.name)  # the runner makes the bucket
        task = statemachine.new_task(msgspec.structs.replace(a_run(), run_id="run-s"), an_event(), runner="r1",
                                     now=now_iso())
        handle = store.handle(task, await store.create(task) or 0)
        await handle.update(lambda t: statemachine.transition(t, "succeeded", by="r1", now=now_iso()))

        async def both() -> list[str] | None:
            ids = await _task_event_ids(operator.nc)
            return ids if len(ids) >= 2 else None

        assert await poll(both, what="the task's two events") == ["task-run-s-2", "task-run-s-3"]
    await bridge.clean()
    await runner.clean()
    await bridge.nc.publish(f"$KV.{tasks_bucket(SUBJECTS).name}.run-s", b"{}")  # a task is the runners' to write
    await bridge.refused(f"$KV.{tasks_bucket(SUBJECTS).name}.run-s")
