"""Delivery: only to the reply target frozen from the event; none without one, never a guess.
Also: a synthetic run records what it would have sent and sends nothing; an agent's write
waits for approval with the task (not the run message) holding the state."""

from __future__ import annotations

import json
import uuid
from typing import Any

from nats.aio.client import Client as NATS

from services.runner.config import RunnerConfig
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.run_records import runs_stream_name
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import (
    ECHO,
    apply,
    bind,
    event,
    publish_events,
    sent,
    settled,
    task_id_of,
)
from tests.harness.waiting import consumed


def echo_agent(agent_id: str, **extra: Any) -> dict[str, Any]:
    step = {"id": "echo", "tool": f"{ECHO}.echo", "arguments": {"value": "{{ event.data.n }}"}}
    return {"kind": "Agent", "id": agent_id, "agent_kind": "playbook", "events": ["*"], "tools": [f"{ECHO}.echo"],
            "playbook": {"steps": [step], "answer": "echoed {{ steps.echo.structured.value }}"}, **extra}


async def test_a_run_without_a_reply_target_finishes_without_delivering(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"nort-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", echo_agent(f"a-{case}"))
    await bind(snc, subjects, f"b-{case}", "member.joined", "agent", f"a-{case}", case=case)
    before = len(sent(stack.chat_log))
    doc = event("member.joined", {"n": 7, "case": case}, subject_message=False)  # no session, no conversation
    await publish_events(snc.jetstream(), subjects, [doc])
    task = await settled(snc, subjects, task_id_of(doc, f"b-{case}"))
    assert task["state"] == "succeeded", json.dumps(task, indent=1)[:3000]
    assert task["delivery"]["reply_target"] is None
    assert task["answer"] == "echoed 7" and task["delivered"] is False
    assert not [s for s in task["steps"] if s["kind"] == "delivery"]
    assert len(sent(stack.chat_log)) == before


async def test_a_synthetic_run_records_the_reply_it_would_send_and_sends_nothing(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"syn-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", echo_agent(f"a-{case}"))
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    session = f"group-{case}"
    doc = event("message.received", {"n": 3, "case": case, "text": "hi"}, session_id=session, synthetic=True)
    await publish_events(snc.jetstream(), subjects, [doc])
    task = await settled(snc, subjects, task_id_of(doc, f"b-{case}"))
    assert task["state"] == "succeeded" and task["synthetic"] is True, json.dumps(task, indent=1)[:3000]
    delivery = next(s for s in task["steps"] if s["kind"] == "delivery")
    assert delivery["classification"] == "suppressed" and task["delivered"] is False
    assert delivery["arguments"] == {"text": "echoed 3"}
    assert not [r for r in sent(stack.chat_log) if r.get("session_id") == session]


async def test_a_write_waits_for_approval_in_the_task_and_the_run_is_acknowledged(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"apr-{uuid.uuid4().hex[:6]}"
    agent = {"kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"],
             "tools": [f"{ECHO}.echo", f"{ECHO}.counter_increment"],
             "playbook": {"steps": [
                 {"id": "look", "tool": f"{ECHO}.echo", "arguments": {"value": 1}},
                 {"id": "count", "tool": f"{ECHO}.counter_increment", "arguments": {"key": case}},
             ], "answer": "counted"}}
    await apply(snc, subjects, "agents", agent)
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "count it"}, session_id=f"group-{case}")
    await publish_events(snc.jetstream(), subjects, [doc])
    task_id = task_id_of(doc, f"b-{case}")
    task = await settled(snc, subjects, task_id)
    assert task["state"] == "awaiting_approval", json.dumps(task, indent=1)[:3000]
    step = next(s for s in task["steps"] if s["id"] == "count")
    assert step["classification"] == "needs_approval" and step["approval_id"] == task["approval_id"]
    approval = await admin_request(snc, subjects, "approvals", "get", {"id": task["approval_id"]}, timeout=20)
    assert approval["task_id"] == task_id and approval["tool"] == f"{ECHO}.counter_increment"
    # The run (its record) was acknowledged, so no runner is given it again: the task is the truth.
    await consumed(snc.jetstream(), runs_stream_name(subjects), RunnerConfig().durable,
                   what="the run to be acknowledged")
