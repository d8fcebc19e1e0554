"""Recovery from the step log, made deterministic: a task is left in KV exactly as a runner
SIGKILLed at the worst moment leaves it — a write recorded `started`, its outcome not — and its
run message is published again. The resuming runner asks the gateway again under the step's
call id: its call ledger answers with the recorded result, or runs a call it never received;
a call it was executing when it died (the ledger entry is seeded here as a dead gateway leaves
it) is looked up in the audit and the step's read-back, or the task says it is unverified.
Nothing is called again blindly."""

from __future__ import annotations

import json
import uuid
from typing import Any

import msgspec
from nats.aio.client import Client as NATS

from shared.contracts.envelope import Header, Source
from shared.contracts.subjects import Subjects
from shared.contracts.task import TaskStep
from shared.contracts.toolcall import ToolCallContext, ToolCallEnvelope, ToolCallRequest, decode_result
from tests.harness.left_tasks import abandoned_in_the_ledger, left_by_a_dead_runner
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import CHAT, ECHO, apply, record_run, run_parts, sent, settled
from tests.harness.tool_calls import LONG_AGO, echo_counter


def _playbook_agent(agent_id: str, steps: list[dict[str, Any]], answer: str | None, tools: list[str]) -> dict[str, Any]:
    return {"kind": "Agent", "id": agent_id, "agent_kind": "playbook", "events": ["*"], "tools": tools,
            "playbook": {"steps": steps, "answer": answer}}


def _started_delivery(call_id: str, text: str) -> TaskStep:
    return TaskStep(id="deliver", kind="delivery", name="event_reply", status="started", started_at=LONG_AGO,
                    side_effect="write", arguments={"text": text}, call_id=call_id, timeout_seconds=5.0)


async def test_a_reply_the_gateway_recorded_is_not_sent_again(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"rca-{uuid.uuid4().hex[:6]}"
    agent_id = f"a-{case}"
    await apply(snc, subjects, "agents", _playbook_agent(agent_id, [], "hello", []))
    _, delivery, run = run_parts(case, agent_id)
    call_id = str(uuid.uuid4())
    await record_run(snc, run, subjects)
    # The killed runner's call did reach the gateway: the reply went out and was audited.
    request = ToolCallEnvelope(
        header=Header(method="tools/call", message_id=call_id, timestamp=LONG_AGO, source=Source(app="aurora.runner")),
        payload=ToolCallRequest(tool="event_reply", arguments={"text": "hello"}, context=ToolCallContext(
            agent=agent_id, run_id=run.run_id, task_id=run.run_id, step_id="deliver",
            delivery={**msgspec.to_builtins(delivery), "source_app": CHAT})))
    reply = await snc.request(subjects.tool_call, msgspec.json.encode(request), timeout=15)
    assert decode_result(reply.data).payload.status == "ok"
    await left_by_a_dead_runner(snc, subjects, run, [_started_delivery(call_id, "hello")], agent_id)

    task = await settled(snc, subjects, run.run_id)
    assert task["state"] == "succeeded" and task["delivered"] is True, json.dumps(task, indent=1)[:3000]
    step = next(s for s in task["steps"] if s["id"] == "deliver")
    assert step["classification"] == "ok" and "asking the gateway again" in step["note"], step
    assert task["attempts"] == 2
    assert [r["text"] for r in sent(stack.chat_log) if r.get("session_id") == f"g-{case}"] == ["hello"]


async def test_a_reply_the_gateway_never_received_is_sent_once(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"rcr-{uuid.uuid4().hex[:6]}"
    agent_id = f"a-{case}"
    await apply(snc, subjects, "agents", _playbook_agent(agent_id, [], "hello", []))
    _, _, run = run_parts(case, agent_id)
    call_id = str(uuid.uuid4())
    await left_by_a_dead_runner(snc, subjects, run, [_started_delivery(call_id, "hello")], agent_id)

    task = await settled(snc, subjects, run.run_id)
    assert task["state"] == "succeeded" and task["delivered"] is True, json.dumps(task, indent=1)[:3000]
    step = next(s for s in task["steps"] if s["id"] == "deliver")
    assert step["call_id"] == call_id and "asking the gateway again" in step["note"], step
    assert [r["text"] for r in sent(stack.chat_log) if r.get("session_id") == f"g-{case}"] == ["hello"]


async def test_a_reply_the_gateway_died_sending_leaves_the_task_unverified(stack: RunnerStack, snc: NATS,
                                                                          subjects: Subjects) -> None:
    case = f"rcu-{uuid.uuid4().hex[:6]}"
    agent_id = f"a-{case}"
    await apply(snc, subjects, "agents", _playbook_agent(agent_id, [], "hello", []))
    _, _, run = run_parts(case, agent_id)
    call_id = str(uuid.uuid4())
    await abandoned_in_the_ledger(snc, subjects, call_id, "event_reply", run.run_id)
    await left_by_a_dead_runner(snc, subjects, run, [_started_delivery(call_id, "hello")], agent_id)

    task = await settled(snc, subjects, run.run_id)
    assert task["state"] == "unverified", json.dumps(task, indent=1)[:3000]
    assert "the reply" in task["check"] and call_id in task["check"] and '"text": "hello"' in task["check"]
    assert "does not deduplicate" in task["check"] and "not repeated" in task["check"]
    assert not [r for r in sent(stack.chat_log) if r.get("session_id") == f"g-{case}"]


def _counting_agent(agent_id: str, key: str) -> dict[str, Any]:
    return _playbook_agent(agent_id, [
        {"id": "count", "tool": f"{ECHO}.counter_increment", "arguments": {"key": key},
         "verify": {"tool": f"{ECHO}.counter_get", "arguments": {"key": key},
                    "expect": "result.structured.count >= 1"}},
    ], "counted {{ steps.count.status }}", [f"{ECHO}.counter_increment", f"{ECHO}.counter_get"])


def _started_count(key: str, call_id: str) -> TaskStep:
    return TaskStep(id="count", kind="tool", name=f"{ECHO}.counter_increment", status="started",
                    started_at=LONG_AGO, side_effect="write", arguments={"key": key}, call_id=call_id,
                    timeout_seconds=5.0)


async def test_a_write_the_read_back_finds_is_not_made_again(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"rcv-{uuid.uuid4().hex[:6]}"
    agent_id = f"a-{case}"
    await apply(snc, subjects, "agents", _counting_agent(agent_id, case))
    assert await echo_counter(snc, subjects, case, increment=True) == 1  # the write did happen
    _, _, run = run_parts(case, agent_id)
    call_id = str(uuid.uuid4())
    # the gateway cannot tell
    await abandoned_in_the_ledger(snc, subjects, call_id, f"{ECHO}.counter_increment", run.run_id)
    await left_by_a_dead_runner(snc, subjects, run, [_started_count(case, call_id)], agent_id)

    task = await settled(snc, subjects, run.run_id)
    assert task["state"] == "succeeded", json.dumps(task, indent=1)[:3000]
    count = next(s for s in task["steps"] if s["id"] == "count")
    assert count["classification"] == "ok" and "read-back shows the write happened" in count["note"]
    assert task["answer"] == "counted ok"
    assert await echo_counter(snc, subjects, case) == 1


async def test_a_write_the_read_back_does_not_find_is_made_again(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"rcn-{uuid.uuid4().hex[:6]}"
    agent_id = f"a-{case}"
    await apply(snc, subjects, "agents", _counting_agent(agent_id, case))
    _, _, run = run_parts(case, agent_id)
    call_id = str(uuid.uuid4())
    await abandoned_in_the_ledger(snc, subjects, call_id, f"{ECHO}.counter_increment", run.run_id)
    await left_by_a_dead_runner(snc, subjects, run, [_started_count(case, call_id)], agent_id)

    task = await settled(snc, subjects, run.run_id)
    # Made again, under the same step — and, being an agent's write, it asks for approval first.
    assert task["state"] == "awaiting_approval", json.dumps(task, indent=1)[:3000]
    count = next(s for s in task["steps"] if s["id"] == "count")
    assert count["classification"] == "needs_approval" and "made again" in count["note"]
    assert await echo_counter(snc, subjects, case) == 0
