"""The seam approvals build on: a task waiting for approval is resumed from its step log with the
granted approval — the waiting write is called once, with it; nothing finished runs again.

The runner here runs in this process (against the shared stack's NATS), to call
`TaskExecutor.resume_task` directly, as the approval flow will."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import msgspec
import pytest
from nats.aio.client import Client as NATS

from services.runner.config import RunnerConfig
from services.runner.tasks import statemachine
from services.runner.tasks.approval_decisions import granted_reason
from services.runner.tasks.recovery import waiting_for_approval
from services.runner.tasks.resumer import Resumer
from services.runner.tasks.store import TaskStore
from services.runner.wiring import RunnerService, RunnerSetup, build_runner
from shared.contracts.signals import GATEWAY_APP
from shared.contracts.subjects import Subjects
from shared.contracts.task import decode_task
from shared.jetstream.streams import tasks_bucket
from shared.nats.admin_service import admin_request
from shared.wiring import Connections
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import ECHO, apply, bind, event, publish_events, quiet, settled, task_id_of
from tests.harness.tool_calls import echo_counter
from tests.unit.runner.factories import NOW, a_run, a_step, an_event


@pytest.fixture
async def runner(snc: NATS, subjects: Subjects) -> AsyncIterator[RunnerService]:
    config = RunnerConfig(instance="in-process", ack_wait=3.0, tool_timeout=5.0)
    async with await build_runner(RunnerSetup(subjects, config), Connections(snc)) as service:
        yield service


async def test_a_granted_approval_resumes_the_task_and_the_write_runs_once(
        stack: RunnerStack, snc: NATS, subjects: Subjects, runner: RunnerService) -> None:
    case = f"res-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"],
        "tools": [f"{ECHO}.echo", f"{ECHO}.counter_increment"],
        "playbook": {"steps": [
            {"id": "look", "tool": f"{ECHO}.echo", "arguments": {"key": case}},
            {"id": "count", "tool": f"{ECHO}.counter_increment",
             "arguments": {"key": "{{ steps.look.structured.key }}"}},
        ], "answer": "now {{ steps.count.structured.count }}"}})
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "count"}, session_id=f"g-{case}")
    await publish_events(snc.jetstream(), subjects, [doc])
    task_id = task_id_of(doc, f"b-{case}")
    waiting = await settled(snc, subjects, task_id)
    assert waiting["state"] == "awaiting_approval", json.dumps(waiting)[:2000]
    step = waiting_for_approval(decode_task(json.dumps(waiting).encode()))
    assert step is not None and step.id == "count"
    await admin_request(snc, subjects, "approvals", "grant", {"id": waiting["approval_id"], "by": "alice"},
                        timeout=20)

    # The stack's runners also resume on the grant (their durable on approval events): whichever
    # takes the task first runs it ("drop" here means another runner holds it); once either way.
    verdict = await runner.parts.executor.resume_task(task_id, approvals={step.id: waiting["approval_id"]})
    assert verdict in ("ack", "drop")
    done = await settled(snc, subjects, task_id)
    assert done["state"] == "succeeded" and done["answer"] == "now 1", json.dumps(done, indent=1)[:3000]
    count = next(s for s in done["steps"] if s["id"] == "count")
    assert count["classification"] == "ok" and count["approval_id"] == waiting["approval_id"]
    look = next(s for s in done["steps"] if s["id"] == "look")
    assert look["finished_at"] == next(s for s in waiting["steps"] if s["id"] == "look")["finished_at"]
    assert done["delivered"] is True and await echo_counter(snc, subjects, case) == 1

    assert await runner.parts.executor.resume_task(task_id, approvals={step.id: waiting["approval_id"]}) == "ack"
    await quiet(snc, subjects)  # every runner has handled the grant and the run: nothing is on its way
    assert await echo_counter(snc, subjects, case) == 1  # a finished task is not run again
    assert (await settled(snc, subjects, task_id))["transitions"] == done["transitions"]


async def test_a_running_task_is_taken_over_only_when_its_runner_is_known_to_have_stopped(
        stack: RunnerStack, snc: NATS, subjects: Subjects, runner: RunnerService) -> None:
    # A resume racing a live runner (say, a grant handled while another runner already resumed
    # the task) must leave the task alone; a resume message that came again means the runner
    # holding the task stopped, and only then is it taken over.
    run_id = f"held-{uuid.uuid4().hex[:8]}"
    held = statemachine.new_task(msgspec.structs.replace(a_run(), run_id=run_id), an_event(),
                                 runner="runner-elsewhere", now=NOW)
    kv = await snc.jetstream().key_value(tasks_bucket(subjects).name)
    await kv.create(run_id, msgspec.json.encode(held))

    assert await runner.parts.executor.resume_task(run_id) == "drop"
    entry = await kv.get(run_id)
    assert entry.value is not None
    kept = decode_task(entry.value)
    assert (kept.state, kept.attempts, kept.runner) == ("running", 1, "runner-elsewhere")

    assert await runner.parts.executor.resume_task(run_id, take_over=True) == "ack"
    entry = await kv.get(run_id)
    assert entry.value is not None
    taken = decode_task(entry.value)
    assert (taken.attempts, taken.runner) == (2, "in-process")
    assert any(t.reason == "resumed after attempt 1 (runner runner-elsewhere) stopped" for t in taken.transitions)


async def test_a_grant_delivered_again_takes_over_the_task_its_resuming_runner_left_running(
        stack: RunnerStack, snc: NATS, subjects: Subjects, runner: RunnerService) -> None:
    # The grant was applied and a runner began resuming the task, then stopped: the grant event
    # comes again (its message was never acked) and is the only thing that can move the task on.
    approval, run_id = f"apr-{uuid.uuid4().hex[:8]}", f"left-{uuid.uuid4().hex[:8]}"
    asked = statemachine.record_steps(
        statemachine.new_task(msgspec.structs.replace(a_run(), run_id=run_id), an_event(), runner="r0", now=NOW),
        [a_step("count", side_effect="write", classification="needs_approval", approval_id=approval)], now=NOW)
    parked = statemachine.transition(asked, "awaiting_approval", by="r0", now=NOW, approval_id=approval)
    granted = statemachine.transition(parked, "queued", by="alice", now=NOW,
                                      reason=f"{granted_reason(approval)} by alice at {NOW}")
    left = statemachine.claim(granted, runner="stopped-runner", now=NOW)
    js = snc.jetstream()
    kv = await js.key_value(tasks_bucket(subjects).name)
    await kv.create(run_id, msgspec.json.encode(left))

    store = TaskStore(kv, js=js, bucket=tasks_bucket(subjects).name)
    resumer = Resumer(js, subjects, store, runner.parts.executor, RunnerConfig(instance="in-process"), stream="unused")
    grant = msgspec.json.encode({
        "header": {"method": "aurora/event", "message_id": f"evt-{approval}", "timestamp": NOW,
                   "source": {"app": GATEWAY_APP}},
        "payload": {"type": "approval.granted", "data": {"id": approval, "task_id": run_id}}})

    assert await resumer.handle(grant, redelivered=True) == "ack"
    entry = await kv.get(run_id)
    assert entry.value is not None
    taken = decode_task(entry.value)
    assert (taken.attempts, taken.runner) == (left.attempts + 1, "in-process")
    assert any(t.reason == f"resumed after attempt {left.attempts} (runner stopped-runner) stopped"
               for t in taken.transitions)


async def test_a_grant_for_a_task_not_stored_yet_comes_back_and_is_applied_once_it_is(
        stack: RunnerStack, snc: NATS, subjects: Subjects, runner: RunnerService) -> None:
    # A new run's task is written at its first durable change, and a playbook's write may leave
    # before it: a person quick enough (or a program) can grant the approval before the runner
    # parked the task. The grant waits (nak) for the task instead of being dropped.
    approval, run_id = f"apr-{uuid.uuid4().hex[:8]}", f"early-{uuid.uuid4().hex[:8]}"
    js = snc.jetstream()
    kv = await js.key_value(tasks_bucket(subjects).name)
    store = TaskStore(kv, js=js, bucket=tasks_bucket(subjects).name)
    resumer = Resumer(js, subjects, store, runner.parts.executor, RunnerConfig(instance="in-process"), stream="unused")

    def grant(requested_at: str) -> bytes:
        return msgspec.json.encode({
            "header": {"method": "aurora/event", "message_id": f"evt-{approval}", "timestamp": NOW,
                       "source": {"app": GATEWAY_APP}},
            "payload": {"type": "approval.granted", "data": {
                "id": approval, "task_id": run_id, "requested_at": requested_at, "decided_by": "alice"}}})

    now = datetime.now(UTC)
    assert await resumer.handle(grant(now.isoformat())) == "nak"  # not stored yet: it comes back
    assert await resumer.handle(grant((now - timedelta(minutes=2)).isoformat())) == "ack"  # long gone: dropped

    asked = statemachine.record_steps(
        statemachine.new_task(msgspec.structs.replace(a_run(), run_id=run_id), an_event(), runner="r0", now=NOW),
        [a_step("count", side_effect="write", classification="needs_approval", approval_id=approval)], now=NOW)
    await kv.create(run_id, msgspec.json.encode(
        statemachine.transition(asked, "awaiting_approval", by="r0", now=NOW, approval_id=approval)))
    assert await resumer.handle(grant(now.isoformat()), redelivered=True) == "ack"
    entry = await kv.get(run_id)
    assert entry.value is not None
    decided = decode_task(entry.value)
    assert any(t.reason is not None and t.reason.startswith(granted_reason(approval)) for t in decided.transitions)
