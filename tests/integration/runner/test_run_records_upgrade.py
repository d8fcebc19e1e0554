"""Runs are run records (issue 38), and an upgrade loses nothing: a record written before (key
`<run id>`, whose run went through AMP_RUNS) is never run again, even if it held a whole run; and
runs still waiting in an AMP_RUNS an older deployment left are run by the new runners. The runner
is built in this process (`build_runner`) over a real nats-server; a playbook agent, no model."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import msgspec
from nats.aio.client import Client as NATS
from nats.js.errors import KeyNotFoundError

from services.runner.config import RunnerConfig
from services.runner.wiring import RunnerService, RunnerSetup, build_runner
from shared.contracts.envelope import Envelope, EventEnvelope, Header, Source
from shared.contracts.run import METHOD_AGENT_RUN, DeliveryContext, RecordedRun, RunEnvelope, RunPayload, RunTarget
from shared.contracts.subjects import Subjects
from shared.contracts.task import TERMINAL_STATES, Task, decode_task
from shared.jetstream.run_records import record_subject
from shared.jetstream.streams import (
    agents_bucket,
    ensure_bucket,
    ensure_stream,
    run_records_bucket,
    runs_stream,
    tasks_bucket,
)
from shared.wiring import Connections
from tests.harness.run_records import queue_run, runs_stream_name
from tests.harness.waiting import consumed, poll

AGENT = "upgraded-greeter"
PLAYBOOK = {"kind": "Agent", "id": AGENT, "agent_kind": "playbook", "events": ["message.received"],
            "playbook": {"steps": [], "answer": "heard {{ event.data.text }}"}}


def a_run(run_id: str, text: str = "hi") -> RunEnvelope:
    now = datetime.now(UTC).isoformat()
    event = msgspec.convert({"header": {"method": "aurora/event", "message_id": f"evt-{run_id}", "timestamp": now,
                                        "source": {"app": "test.chat"}},
                             "payload": {"type": "message.received", "data": {"text": text}}}, EventEnvelope)
    run = RunPayload(run_id=run_id, target=RunTarget(type="agent", id=AGENT), binding_id="b-upgrade", event=event,
                     delivery=DeliveryContext())
    return Envelope(header=Header(method=METHOD_AGENT_RUN, message_id=run_id, timestamp=now,
                                  source=Source(app="aurora.router")), payload=run)


async def _task(nc: NATS, subjects: Subjects, run_id: str) -> Task | None:
    try:
        entry = await (await nc.jetstream().key_value(tasks_bucket(subjects).name)).get(run_id)
    except KeyNotFoundError:
        return None
    return decode_task(entry.value) if entry.value else None


async def _settled(nc: NATS, subjects: Subjects, run_id: str) -> Task:
    async def done() -> Task | None:
        task = await _task(nc, subjects, run_id)
        return task if task is not None and task.state in TERMINAL_STATES else None

    return await poll(done, timeout=20, what=f"run {run_id}'s task settled")


@asynccontextmanager
async def _runner(nc: NATS, subjects: Subjects) -> AsyncIterator[RunnerService]:
    service = await build_runner(RunnerSetup(subjects, RunnerConfig(instance="upgraded", ack_wait=3.0)),
                                 Connections(nc))
    stop = asyncio.Event()
    async with service:
        running = asyncio.create_task(service.run(stop))
        try:
            yield service
        finally:
            stop.set()
            await running


async def test_a_record_written_before_runs_moved_in_is_never_run(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    await (await ensure_bucket(js, agents_bucket(subjects))).put(AGENT, json.dumps(PLAYBOOK).encode())
    bucket = run_records_bucket(subjects).name
    await ensure_bucket(js, run_records_bucket(subjects))
    # The worst case: an older record under its old key holding a whole run (it went through AMP_RUNS).
    old_id, new_id = f"old-{uuid.uuid4().hex[:8]}", f"new-{uuid.uuid4().hex[:8]}"
    old, new = a_run(old_id, "before"), a_run(new_id, "after")
    payload = old.payload
    assert payload.event is not None
    whole = RecordedRun(run_id=old_id, target=payload.target, binding_id=payload.binding_id,
                        event_message_id=payload.event.header.message_id, source_app="test.chat",
                        event_at=payload.event.header.timestamp, header=old.header, event=payload.event)
    old_seq = (await js.publish(record_subject(bucket, old_id), msgspec.json.encode(whole))).seq
    new_seq = await queue_run(js, subjects, new)
    assert new_seq > old_seq
    async with _runner(nc, subjects):
        task = await _settled(nc, subjects, new_id)
        assert (task.state, task.answer) == ("succeeded", "heard after"), task
        info = await consumed(js, runs_stream_name(subjects), RunnerConfig().durable, through=new_seq)
    assert info.delivered.consumer_seq == 1, "the runners' durable was given the new run alone"
    assert await _task(nc, subjects, old_id) is None


async def test_runs_left_in_an_older_amp_runs_are_run_after_the_upgrade(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    await (await ensure_bucket(js, agents_bucket(subjects))).put(AGENT, json.dumps(PLAYBOOK).encode())
    legacy = runs_stream(subjects)
    await ensure_stream(js, legacy)  # what an older deployment left, with a run waiting in it
    run_id = f"left-{uuid.uuid4().hex[:8]}"
    await js.publish(subjects.run("agent", AGENT), msgspec.json.encode(a_run(run_id, "left")),
                     headers={"Nats-Msg-Id": run_id})
    async with _runner(nc, subjects) as service:
        assert service.parts.legacy_worker is not None
        task = await _settled(nc, subjects, run_id)
        assert (task.state, task.answer) == ("succeeded", "heard left"), task
        await consumed(js, legacy.name, RunnerConfig().durable)
    assert (await js.stream_info(legacy.name)).state.messages == 0  # a work queue: drained
