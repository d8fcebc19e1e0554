"""How a task ended, told in the conversation it came from, in the agent's language: an approval
refused in the chat, a run cancelled by an operator (also when the runner it asked died before
settling it), a run that failed having changed nothing.
One short sentence, no id and no error text (those stay in the task), and exactly one: a refusal
handled again after a runner died having told the user tells them nothing more."""

from __future__ import annotations

import json
import uuid

import msgspec
from nats.aio.client import Client as NATS

from services.runner.tools.client import step_call_id
from shared.contracts.envelope import Envelope, Header, Source
from shared.contracts.run import METHOD_AGENT_RUN
from shared.contracts.subjects import Subjects
from shared.contracts.task import Task, TaskStep, Transition, decode_task, encode_task
from shared.contracts.toolcall import ToolCallContext, ToolCallEnvelope, ToolCallRequest, decode_result
from shared.jetstream.streams import tasks_bucket
from shared.nats.admin_service import admin_request
from tests.harness.chat_approvals import USER, ChatStack, answer_in_chat, asked_in_chat, counter_write_agent
from tests.harness.run_records import queue_run
from tests.harness.runs import (
    CHAT,
    ECHO,
    TERMINAL,
    apply,
    bind,
    event,
    publish_events,
    record_run,
    run_parts,
    sent,
    settled,
    task_id_of,
)
from tests.harness.tool_calls import LONG_AGO, echo_counter

DENIED = {"zh-CN": "未执行：此请求所需的审批被拒绝，因此没有做任何更改。",
          "en": "Not done: the approval this request needed was refused, so nothing was changed."}
FAILED_ZH = "抱歉，此请求未能完成，没有做任何更改。"
CANCELLED_EN = "This request was cancelled before it was finished."


def said(stack: ChatStack, session: str) -> list[str]:
    """What the conversation was told besides questions (those carry an interaction id)."""
    return [m["text"] for m in sent(stack.chat_log) if m.get("session_id") == session and not m.get("interaction_id")]


async def test_a_refusal_in_the_chat_is_told_in_chinese(stack: ChatStack, snc: NATS, subjects: Subjects) -> None:
    case = f"endno-{uuid.uuid4().hex[:6]}"
    asked = await asked_in_chat(stack, snc, subjects, case, agent=counter_write_agent(case, locale="zh-CN"))
    task_id, session = asked.task_id, asked.session
    await answer_in_chat(snc, subjects, asked, "2")
    done = await settled(snc, subjects, task_id, timeout=40, states=TERMINAL)
    assert done["state"] == "cancelled" and done["error"]["code"] == "approval_denied", json.dumps(done)[:2000]
    # told before the task moved, so it is there now; who refused and when stay in the task
    assert said(stack, session) == [DENIED["zh-CN"]] and done["delivered"] is True
    assert f"denied by user {USER} in the chat" in done["transitions"][-1]["reason"]
    assert await echo_counter(snc, subjects, case) == 0


async def test_a_refusal_in_english_is_told_in_english(stack: ChatStack, snc: NATS, subjects: Subjects) -> None:
    case = f"endnoen-{uuid.uuid4().hex[:6]}"
    asked = await asked_in_chat(stack, snc, subjects, case, agent=counter_write_agent(case, locale="en"))
    await answer_in_chat(snc, subjects, asked, "no")
    done = await settled(snc, subjects, asked.task_id, timeout=40, states=TERMINAL)
    assert done["state"] == "cancelled" and done["error"]["code"] == "approval_denied", json.dumps(done)[:2000]
    assert said(stack, asked.session) == [DENIED["en"]]


async def test_a_refusal_handled_again_after_a_runner_died_telling_the_user_tells_them_once(
        stack: ChatStack, snc: NATS, subjects: Subjects) -> None:
    case = f"endnodup-{uuid.uuid4().hex[:6]}"
    asked = await asked_in_chat(stack, snc, subjects, case, agent=counter_write_agent(case, locale="zh-CN"))
    task_id, session = asked.task_id, asked.session
    # As a runner killed between telling the user and cancelling the task leaves it: the notice
    # recorded `started` in the still-waiting task, and the gateway already sent it.
    kv = await snc.jetstream().key_value(tasks_bucket(subjects).name)
    entry = await kv.get(task_id)
    assert entry.value is not None
    task = decode_task(entry.value)
    call_id = step_call_id(task_id, "deliver", task.attempts, first=True, side_effect="write")
    request = ToolCallEnvelope(
        header=Header(method="tools/call", message_id=call_id, timestamp=LONG_AGO, source=Source(app="aurora.runner")),
        payload=ToolCallRequest(tool="event_reply", arguments={"text": DENIED["zh-CN"]}, context=ToolCallContext(
            agent=f"a-{case}", run_id=task.run_id, task_id=task_id, step_id="deliver",
            delivery={**msgspec.to_builtins(task.delivery), "source_app": CHAT})))
    reply = await snc.request(subjects.tool_call, msgspec.json.encode(request), timeout=15)
    assert decode_result(reply.data).payload.status == "ok"
    started = TaskStep(id="deliver", kind="delivery", name="event_reply", status="started", started_at=LONG_AGO,
                       side_effect="write", arguments={"text": DENIED["zh-CN"]}, call_id=call_id, timeout_seconds=5.0)
    await kv.update(task_id, encode_task(msgspec.structs.replace(task, steps=(*task.steps, started))),
                    last=entry.revision)
    assert said(stack, session) == [DENIED["zh-CN"]]

    await answer_in_chat(snc, subjects, asked, "2")  # a runner finds the notice begun
    done = await settled(snc, subjects, task_id, timeout=40, states=TERMINAL)
    assert done["state"] == "cancelled" and done["error"]["code"] == "approval_denied", json.dumps(done)[:2000]
    assert said(stack, session) == [DENIED["zh-CN"]]  # the gateway's call ledger answered: not sent again
    notice = next(s for s in done["steps"] if s["id"] == "deliver")
    assert notice["classification"] == "ok" and "asking the gateway again" in notice["note"], notice


async def test_a_run_that_failed_having_changed_nothing_says_so(stack: ChatStack, snc: NATS,
                                                               subjects: Subjects) -> None:
    case = f"endfail-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"], "tools": [f"{ECHO}.fail"],
        "playbook": {"steps": [{"id": "broken", "tool": f"{ECHO}.fail"}], "answer": "never said"}})
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    session = f"s-{case}"
    doc = event("message.received", {"case": case, "text": "go"}, session_id=session)
    await publish_events(snc.jetstream(), subjects, [doc])
    done = await settled(snc, subjects, task_id_of(doc, f"b-{case}"), timeout=40, states=TERMINAL)
    assert done["state"] == "failed" and done["error"]["code"] == "step_tool_error", json.dumps(done)[:2000]
    # the app's error text stays in the task, not in the sentence
    assert said(stack, session) == [FAILED_ZH] and done["delivered"] is True
    assert "intentional failure" in done["error"]["message"]


async def test_a_run_an_operator_cancelled_says_so_in_english(stack: ChatStack, snc: NATS,
                                                              subjects: Subjects) -> None:
    case = f"endcan-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"], "tools": [f"{ECHO}.slow"],
        "locale": "en", "playbook": {"steps": [
            {"id": "wait", "tool": f"{ECHO}.slow", "arguments": {"seconds": 3}},
            {"id": "again", "tool": f"{ECHO}.slow", "arguments": {"seconds": 3}}], "answer": "never said"}})
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    session = f"s-{case}"
    doc = event("message.received", {"case": case, "text": "go"}, session_id=session)
    await publish_events(snc.jetstream(), subjects, [doc])
    task_id = task_id_of(doc, f"b-{case}")
    await settled(snc, subjects, task_id, states=("running",))
    answer = await admin_request(snc, subjects, "tasks", "cancel", {"id": task_id, "by": "alice"})
    assert answer["result"] == "cancel_requested", answer
    done = await settled(snc, subjects, task_id, timeout=40, states=TERMINAL)
    assert done["state"] == "cancelled", json.dumps(done)[:2000]
    assert said(stack, session) == [CANCELLED_EN] and done["delivered"] is True


async def test_a_cancel_its_runner_died_before_settling_is_told_by_the_runner_that_takes_the_run(
        stack: ChatStack, snc: NATS, subjects: Subjects) -> None:
    case = f"endcandead-{uuid.uuid4().hex[:6]}"
    agent_id = f"a-{case}"
    await apply(snc, subjects, "agents", {"kind": "Agent", "id": agent_id, "agent_kind": "playbook",
                                          "events": ["*"], "tools": [], "locale": "en",
                                          "playbook": {"steps": [], "answer": "never said"}})
    envelope, delivery, run = run_parts(case, agent_id)
    await record_run(snc, run, subjects)
    # As a runner killed after an operator asked its task to stop, before it settled the task.
    task = Task(id=run.run_id, run_id=run.run_id, state="running", target=run.target, binding_id=run.binding_id,
                created_at=LONG_AGO, updated_at=LONG_AGO, agent=agent_id, event_id=envelope.header.message_id,
                event_type=envelope.payload.type, session_id=envelope.payload.session_id, source_app=CHAT,
                delivery=delivery, event=envelope, attempts=1, runner="dead-runner", cancel_requested="alice",
                transitions=(Transition(to="running", at=LONG_AGO, by="dead-runner"),))
    js = snc.jetstream()
    await (await js.key_value(tasks_bucket(subjects).name)).create(task.id, encode_task(task))
    message = Envelope(header=Header(method=METHOD_AGENT_RUN, message_id=run.run_id, timestamp=LONG_AGO,
                                     source=Source(app="aurora.router")), payload=run)
    await queue_run(js, subjects, message)

    done = await settled(snc, subjects, run.run_id, timeout=40, states=TERMINAL)
    assert done["state"] == "cancelled" and "cancelled by alice" in done["transitions"][-1]["reason"], done
    assert said(stack, f"g-{case}") == [CANCELLED_EN] and done["delivered"] is True
