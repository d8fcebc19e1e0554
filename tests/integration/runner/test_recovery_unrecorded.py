"""A replayable run's write is not recorded `started`: its first call has the same call id in
every attempt, and the gateway's call ledger — which claims a write before sending it — is its
claim. Made deterministic: the task is left in KV as a runner SIGKILLed after the write leaves
it (no step of it recorded), the call made as that runner made it (or not, or with other
arguments), and the run published again. The resuming runner makes the write again under the
same id; the ledger answers: never sent → sent once; sent → its result, nothing sent twice;
sent with other arguments → refused, the task `unverified`; in doubt → recovered as a write found
`started` is (the audit, the read-back), else `unverified`."""

from __future__ import annotations

import json
import uuid
from typing import Any

from nats.aio.client import Client as NATS

from services.runner.tools.client import step_call_id
from shared.contracts.subjects import Subjects
from tests.harness.left_tasks import abandoned_in_the_ledger, called_by_a_dead_runner, left_by_a_dead_runner
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import ECHO, apply, run_parts, sent, settled
from tests.harness.tool_calls import echo_counter


def _replying_agent(agent_id: str) -> dict[str, Any]:
    return {"kind": "Agent", "id": agent_id, "agent_kind": "playbook", "events": ["*"], "tools": [],
            "playbook": {"steps": [], "answer": "hello"}}


def _first_call(run_id: str, step_id: str) -> str:
    """The call id the dead runner's attempt used for the step's first call (any attempt's)."""
    return step_call_id(run_id, step_id, 1, first=True, side_effect="write")


def _said(stack: RunnerStack, case: str) -> list[str]:
    return [r["text"] for r in sent(stack.chat_log) if r.get("session_id") == f"g-{case}"]


async def test_a_reply_an_earlier_attempt_sent_is_not_sent_again(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"rua-{uuid.uuid4().hex[:6]}"
    agent_id = f"a-{case}"
    await apply(snc, subjects, "agents", _replying_agent(agent_id))
    _, delivery, run = run_parts(case, agent_id)
    call_id = _first_call(run.run_id, "deliver")
    first = await called_by_a_dead_runner(snc, subjects, run, delivery, agent_id, call_id=call_id, step_id="deliver",
                                          tool="event_reply", arguments={"text": "hello"})
    assert first.status == "ok", first
    await left_by_a_dead_runner(snc, subjects, run, [], agent_id)  # killed before the task's next change

    task = await settled(snc, subjects, run.run_id, timeout=40)
    assert task["state"] == "succeeded" and task["delivered"] is True, json.dumps(task, indent=1)[:3000]
    assert task["attempts"] == 2
    step = next(s for s in task["steps"] if s["id"] == "deliver")
    assert step["status"] == "finished" and step["classification"] == "ok" and step["call_id"] == call_id, step
    assert _said(stack, case) == ["hello"]  # the ledger answered with the reply it sent


async def test_a_reply_an_earlier_attempt_never_sent_is_sent_once(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"run-{uuid.uuid4().hex[:6]}"
    agent_id = f"a-{case}"
    await apply(snc, subjects, "agents", _replying_agent(agent_id))
    _, _, run = run_parts(case, agent_id)
    await left_by_a_dead_runner(snc, subjects, run, [], agent_id)

    task = await settled(snc, subjects, run.run_id, timeout=40)
    assert task["state"] == "succeeded" and task["delivered"] is True, json.dumps(task, indent=1)[:3000]
    step = next(s for s in task["steps"] if s["id"] == "deliver")
    assert step["classification"] == "ok" and step["call_id"] == _first_call(run.run_id, "deliver"), step
    assert _said(stack, case) == ["hello"]


async def test_a_reply_an_earlier_attempt_sent_with_other_words_leaves_the_task_unverified(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    """The run's reads answered otherwise on resuming, so this attempt's reply differs from the
    one the earlier attempt sent under the same call id: not sent, and a person is told what to
    check."""
    case = f"ruo-{uuid.uuid4().hex[:6]}"
    agent_id = f"a-{case}"
    await apply(snc, subjects, "agents", _replying_agent(agent_id))
    _, delivery, run = run_parts(case, agent_id)
    call_id = _first_call(run.run_id, "deliver")
    first = await called_by_a_dead_runner(snc, subjects, run, delivery, agent_id, call_id=call_id, step_id="deliver",
                                          tool="event_reply", arguments={"text": "hello from before"})
    assert first.status == "ok", first
    await left_by_a_dead_runner(snc, subjects, run, [], agent_id)

    task = await settled(snc, subjects, run.run_id, timeout=40)
    assert task["state"] == "unverified", json.dumps(task, indent=1)[:3000]
    check = task["check"]
    assert "earlier attempt" in check and "other arguments" in check and call_id in check, check
    assert "aurora audit tail" in check and '{"text": "hello"}' in check and "not sent again" in check, check
    step = next(s for s in task["steps"] if s["id"] == "deliver")
    assert step["status"] == "started" and "other arguments" in step["note"], step
    assert _said(stack, case) == ["hello from before"]  # nothing sent twice, no notice over it


def _counting_agent(agent_id: str, key: str) -> dict[str, Any]:
    return {"kind": "Agent", "id": agent_id, "agent_kind": "playbook", "events": ["*"],
            "tools": [f"{ECHO}.counter_increment", f"{ECHO}.counter_get"], "playbook": {"steps": [
                {"id": "count", "tool": f"{ECHO}.counter_increment", "arguments": {"key": key},
                 "verify": {"tool": f"{ECHO}.counter_get", "arguments": {"key": key},
                            "expect": "result.structured.count >= 1"}}], "answer": "counted {{ steps.count.status }}"}}


async def test_a_write_in_doubt_the_read_back_finds_is_not_made_again(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"ruv-{uuid.uuid4().hex[:6]}"
    agent_id = f"a-{case}"
    await apply(snc, subjects, "agents", _counting_agent(agent_id, case))
    assert await echo_counter(snc, subjects, case, increment=True) == 1  # the write did happen
    _, _, run = run_parts(case, agent_id)
    # The gateway sending it died: asked again, the ledger cannot tell.
    await abandoned_in_the_ledger(snc, subjects, _first_call(run.run_id, "count"), f"{ECHO}.counter_increment",
                                  run.run_id, arguments={"key": case})
    await left_by_a_dead_runner(snc, subjects, run, [], agent_id)

    task = await settled(snc, subjects, run.run_id, timeout=40)
    assert task["state"] == "succeeded", json.dumps(task, indent=1)[:3000]
    count = next(s for s in task["steps"] if s["id"] == "count")
    assert count["classification"] == "ok" and "read-back shows the write happened" in count["note"], count
    assert task["answer"] == "counted ok"
    assert await echo_counter(snc, subjects, case) == 1


async def test_a_reply_in_doubt_nobody_can_tell_leaves_the_task_unverified(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"ruu-{uuid.uuid4().hex[:6]}"
    agent_id = f"a-{case}"
    await apply(snc, subjects, "agents", _replying_agent(agent_id))
    _, _, run = run_parts(case, agent_id)
    call_id = _first_call(run.run_id, "deliver")
    await abandoned_in_the_ledger(snc, subjects, call_id, "event_reply", run.run_id, arguments={"text": "hello"})
    await left_by_a_dead_runner(snc, subjects, run, [], agent_id)

    task = await settled(snc, subjects, run.run_id, timeout=40)
    assert task["state"] == "unverified", json.dumps(task, indent=1)[:3000]
    check = task["check"]
    assert "the reply" in check and call_id in check and '"text": "hello"' in check, check
    assert "does not deduplicate" in check and "not repeated" in check, check
    assert _said(stack, case) == []
