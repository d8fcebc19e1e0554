"""The runner built by `build_runner` in this process, over a real nats-server: it takes a run from
the RUNS stream and records its task (a playbook agent, no model, no tool), and nothing of it
answers after it stopped."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime

import msgspec
import pytest
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.js.errors import KeyNotFoundError

from services.runner.config import RunnerConfig
from services.runner.wiring import RunnerSetup, build_runner
from shared.contracts.envelope import Envelope, EventEnvelope, Header, Source
from shared.contracts.run import METHOD_AGENT_RUN, DeliveryContext, RunEnvelope, RunPayload, RunTarget
from shared.contracts.subjects import Subjects
from shared.contracts.task import TERMINAL_STATES, Task, decode_task
from shared.jetstream.streams import agents_bucket, tasks_bucket
from shared.nats.admin_service import admin_request
from shared.wiring import Connections
from tests.harness.run_records import queue_run
from tests.harness.waiting import poll

AGENT = "wired-greeter"
PLAYBOOK = {"kind": "Agent", "id": AGENT, "agent_kind": "playbook", "events": ["message.received"],
            "playbook": {"steps": [{"id": "heard", "kind": "check", "expect": "event.data.text == 'hi'"}],
                         "answer": "heard {{ event.data.text }}"}}


def a_run(run_id: str) -> RunEnvelope:
    """An agent run as the router publishes it, its event inline and no reply target."""
    now = datetime.now(UTC).isoformat()
    event = msgspec.convert({"header": {"method": "aurora/event", "message_id": f"evt-{run_id}", "timestamp": now,
                                        "source": {"app": "test.chat"}},
                             "payload": {"type": "message.received", "data": {"text": "hi"}}}, EventEnvelope)
    run = RunPayload(run_id=run_id, target=RunTarget(type="agent", id=AGENT), binding_id="b-wired", event=event,
                     delivery=DeliveryContext())
    return Envelope(header=Header(method=METHOD_AGENT_RUN, message_id=run_id, timestamp=now,
                                  source=Source(app="aurora.router")), payload=run)


async def test_the_runner_is_built_in_process_takes_a_run_and_stops_whole(nc: NATS, subjects: Subjects) -> None:
    config = RunnerConfig(instance="wired", ack_wait=3.0, tool_timeout=5.0)
    service = await build_runner(RunnerSetup(subjects, config), Connections(nc))
    assert [type(part).__name__ for part in service.order] == [
        "AgentCatalog", "HttpChatModel", "SamplingServer", "Worker", "Resumer", "StartedBy"]
    js = nc.jetstream()
    await (await js.key_value(agents_bucket(subjects).name)).put(AGENT, json.dumps(PLAYBOOK).encode())
    tasks = await js.key_value(tasks_bucket(subjects).name)
    run_id = f"run-{uuid.uuid4().hex[:8]}"

    async def settled() -> Task | None:
        try:
            entry = await tasks.get(run_id)
        except KeyNotFoundError:
            return None
        task = decode_task(entry.value) if entry.value else None
        return task if task is not None and task.state in TERMINAL_STATES else None

    stop = asyncio.Event()
    async with service:
        running = asyncio.create_task(service.run(stop))
        try:
            await queue_run(js, subjects, a_run(run_id))
            task = await poll(settled, timeout=20, what="the run's task settled")
            assert (task.state, task.answer, task.runner) == ("succeeded", "heard hi", "wired"), task
            listed = await admin_request(nc, subjects, "tasks", "get", {"id": run_id})
            assert listed["state"] == "succeeded"
        finally:
            stop.set()
            await running
    parts = service.parts
    assert not any(part.started for part in (parts.catalog, parts.model, parts.sampling, parts.worker,
                                             parts.resumer, parts.admin))
    with pytest.raises(NoRespondersError):  # its admin endpoints and its sampling server are gone
        await nc.request("$SRV.PING.aurora-runner", b"", timeout=2)
    with pytest.raises(NoRespondersError):
        await nc.request(subjects.model_sample, b"{}", timeout=2)


async def test_two_deliveries_of_a_run_at_once_store_its_task_once(nc: NATS, subjects: Subjects) -> None:
    """A run's task is written at its first durable change (services/runner/tasks/store.py): two
    attempts of one run that both began before either wrote (its message came back meanwhile) meet
    at that create. The later one finds the task there and goes on from it — here, finished — so
    the task is written once and both deliveries are acked."""
    config = RunnerConfig(instance="twice", ack_wait=3.0, tool_timeout=5.0)
    service = await build_runner(RunnerSetup(subjects, config), Connections(nc))
    js = nc.jetstream()
    await (await js.key_value(agents_bucket(subjects).name)).put(AGENT, json.dumps(PLAYBOOK).encode())
    tasks = await js.key_value(tasks_bucket(subjects).name)
    stream = f"KV_{tasks_bucket(subjects).name}"
    before = (await js.stream_info(stream)).state.last_seq
    run_id = f"run-{uuid.uuid4().hex[:8]}"
    data = msgspec.json.encode(a_run(run_id))
    async with service:
        executor = service.parts.executor
        verdicts = await asyncio.gather(*(executor.handle_run(data, deliveries=1, stopping=asyncio.Event())
                                          for _ in range(2)))
    assert verdicts == ["ack", "ack"]
    # Counted in the stream: the bucket keeps one revision a key, so its history would show one
    # whatever was written (and nats-py's `history` can read none while the entry is in flight).
    assert (await js.stream_info(stream)).state.last_seq - before == 1
    stored = await tasks.get(run_id)
    assert stored.value is not None and decode_task(stored.value).state == "succeeded"
