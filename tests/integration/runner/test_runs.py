"""What a runner does with runs that are not the happy path: a large event by Object Store
reference, an unknown agent, a run that keeps coming back, a message that is not a run."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

from nats.aio.client import Client as NATS

from shared.contracts.envelope import Envelope, Header, Source
from shared.contracts.run import METHOD_AGENT_RUN
from shared.contracts.subjects import Subjects
from shared.contracts.task import Task, Transition, encode_task
from shared.jetstream.deadletter import REASON, STAGE
from shared.jetstream.streams import tasks_bucket
from tests.harness.run_records import queue_run
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import (
    ECHO,
    apply,
    bind,
    event,
    poll,
    publish_events,
    run_parts,
    settled,
    task_id_of,
)


async def test_a_large_event_travels_by_reference_and_is_read_from_the_object_store(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"big-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"], "tools": [f"{ECHO}.echo"],
        "playbook": {"steps": [{"id": "size", "tool": f"{ECHO}.echo",
                                "arguments": {"length": "{{ event.data.blob | length }}"}}],
                     "answer": "{{ steps.size.structured.length }} characters"}})
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "big", "blob": "x" * 300_000}, session_id=f"g-{case}")
    await publish_events(snc.jetstream(), subjects, [doc])
    task = await settled(snc, subjects, task_id_of(doc, f"b-{case}"))
    assert task["state"] == "succeeded", json.dumps(task)[:2000]
    assert task["event"] is None and task["event_ref"]["size"] > 300_000  # the task keeps the reference
    assert task["answer"] == "300000 characters"


async def test_a_run_for_an_agent_that_is_gone_fails_saying_so(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"gone-{uuid.uuid4().hex[:6]}"
    _, _, run = run_parts(case, f"nobody-{case}")
    message = Envelope(header=Header(method=METHOD_AGENT_RUN, message_id=run.run_id, timestamp=datetime.now(
        UTC).isoformat(), source=Source(app="aurora.router")), payload=run)
    await queue_run(snc.jetstream(), subjects, message)
    task = await settled(snc, subjects, run.run_id)
    assert task["state"] == "failed" and task["error"]["code"] == "unknown_agent"
    assert f"nobody-{case}" in task["error"]["message"]


async def test_a_run_that_keeps_coming_back_fails_after_its_attempts(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"poison-{uuid.uuid4().hex[:6]}"
    agent_id = f"a-{case}"
    _, _, run = run_parts(case, agent_id)
    assert run.event is not None
    long_ago = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()
    task = Task(id=run.run_id, run_id=run.run_id, state="running", target=run.target, binding_id=run.binding_id,
                created_at=long_ago, updated_at=long_ago, event=run.event, delivery=run.delivery, attempts=10,
                runner="crashing-runner", transitions=(Transition(to="running", at=long_ago, by="crashing-runner"),))
    kv = await snc.jetstream().key_value(tasks_bucket(subjects).name)
    await kv.create(task.id, encode_task(task))
    message = Envelope(header=Header(method=METHOD_AGENT_RUN, message_id=run.run_id, timestamp=long_ago,
                                     source=Source(app="aurora.router")), payload=run)
    await queue_run(snc.jetstream(), subjects, message)
    final = await settled(snc, subjects, run.run_id)
    assert final["state"] == "failed" and final["error"]["code"] == "too_many_attempts", json.dumps(final)[:2000]


async def test_a_message_that_is_not_a_run_is_dead_lettered_with_the_reason(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    js = snc.jetstream()
    seq = await queue_run(js, subjects, b'{"header": {"method": "agent/run"}, "payload": 42}',
                          run_id=f"junk-{uuid.uuid4().hex[:6]}")

    async def dead_letter() -> dict[str, str] | None:
        try:
            found = await js.get_last_msg(subjects.stream("DLQ"), subjects.dlq("runner"))
        except Exception:
            return None
        headers = dict(found.headers or {})
        return headers if headers.get("Aurora-Dlq-Sequence") == str(seq) else None

    headers = await poll(dead_letter, what="the dead letter")
    assert headers[STAGE] == "runner" and "not a run record" in headers[REASON], headers
