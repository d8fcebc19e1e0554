"""Platform action tools and synthetic runs against the running stack: `event_reply` is not
offered for an event with nowhere to reply, a `platform_*` tool the agent does not allow is
`denied` even for a crafted call, and a synthetic friend request runs end to end (binding →
agent → `event_respond_friend_request`) without the chat app doing anything."""

from __future__ import annotations

import json
import uuid
from typing import Any

from nats.aio.client import Client as NATS

from shared.contracts.run import ReplyTarget
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import AdminRequestError, admin_request
from tests.harness.run_records import dispatched
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import (
    CHAT,
    ECHO,
    apply,
    bind,
    event,
    poll,
    publish_events,
    quiet,
    sent,
    settled,
    task_id_of,
)
from tests.harness.tool_calls import crafted_call, operator_call

FINAL = ("succeeded", "failed", "unverified", "partial", "cancelled")


async def chat_caught_up(stack: RunnerStack, nc: NATS, subjects: Subjects, case: str) -> str:
    """Send a marker message of our own through the chat app and see it in the app's log: the
    app has handled whatever the gateway sent it before (a refused call it made anyway, say).
    The marker's text."""
    marker = f"marker {case}"
    await operator_call(nc, subjects, f"{CHAT}.send_message", {"session_id": f"m-{case}", "text": marker})
    assert sent(stack.chat_log)[-1]["text"] == marker
    return marker


async def agent_tools(nc: NATS, subjects: Subjects, agent: str, delivery: dict[str, Any]) -> dict[str, Any]:
    """`amp.admin.agents.tools`, once the gateway's copy of a just-applied agent has it."""

    async def known() -> dict[str, Any] | None:
        try:
            found: dict[str, Any] = await admin_request(nc, subjects, "agents", "tools",
                                                        {"agent": agent, "delivery": delivery}, timeout=20)
        except AdminRequestError as exc:
            if exc.code != "unknown_agent":
                raise
            return None
        return found

    return await poll(known, timeout=10, what=f"the gateway to know agent {agent}", interval=0.25)


async def test_event_reply_is_not_offered_without_a_reply_target(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"nt-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"], "tools": [f"{ECHO}.echo"],
        "playbook": {"steps": [{"id": "look", "tool": f"{ECHO}.echo", "arguments": {"key": case}}],
                     "answer": "seen {{ steps.look.structured.key }}"}})
    offered = await agent_tools(snc, subjects, f"a-{case}", {"reply_target": None, "source_app": CHAT})
    assert "event_reply" not in offered["names"].values(), offered["names"]
    reasons = {e["tool"]: e["reason"] for e in offered["excluded"]}
    assert reasons.get("event_reply") == "event_target_unavailable", offered["excluded"]

    # a run of an event without a session or conversation: the answer is kept, never sent
    await bind(snc, subjects, f"b-{case}", "schedule.*", "agent", f"a-{case}", case=case)
    doc = event("schedule.triggered", {"case": case}, subject_message=False)
    await publish_events(snc.jetstream(), subjects, [doc])
    done = await settled(snc, subjects, task_id_of(doc, f"b-{case}"), states=FINAL)
    assert done["state"] == "succeeded" and done["answer"] == f"seen {case}", json.dumps(done)[:2000]
    assert done["delivered"] is False and not [s for s in done["steps"] if s["name"] == "event_reply"]


async def test_a_platform_tool_not_allowed_is_denied_even_when_crafted(stack: RunnerStack, snc: NATS,
                                                                       subjects: Subjects) -> None:
    case = f"pl-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"], "tools": [f"{ECHO}.echo"],
        "playbook": {"steps": []}})
    delivery: dict[str, Any] = {"reply_target": {"app": CHAT, "session_id": f"s-{case}"}, "source_app": CHAT}
    offered = await agent_tools(snc, subjects, f"a-{case}", delivery)
    assert {e["tool"]: e["reason"] for e in offered["excluded"]}.get("platform_send_message") == "not_allowed"
    await dispatched(snc, subjects, agent=f"a-{case}", run_id=f"t-{case}", source_app=CHAT,
                     reply_target=ReplyTarget(app=CHAT, session_id=f"s-{case}"))
    result = await crafted_call(snc, subjects, agent=f"a-{case}", tool="platform_send_message",
                                arguments={"session_id": "anyone", "text": "spam"}, task_id=f"t-{case}",
                                delivery=delivery)
    assert result.status == "denied" and result.error is not None and result.error.code == "not_allowed", result
    await chat_caught_up(stack, snc, subjects, case)
    assert not [r for r in sent(stack.chat_log) if r.get("text") == "spam"]


async def test_a_platform_tool_without_an_agent_is_the_operators_alone(stack: RunnerStack, snc: NATS,
                                                                      subjects: Subjects) -> None:
    """Only the event's own delivery tools serve a pipeline without an agent on the runners'
    subject; a tool that names its own target (`platform_*`) is an operator call."""
    case = f"pl-{uuid.uuid4().hex[:6]}"
    delivery: dict[str, Any] = {"reply_target": {"app": CHAT, "session_id": f"s-{case}"}, "source_app": CHAT}
    await dispatched(snc, subjects, pipeline=f"p-{case}", run_id=f"t-{case}", source_app=CHAT,
                     reply_target=ReplyTarget(app=CHAT, session_id=f"s-{case}"))
    result = await crafted_call(snc, subjects, agent=None, tool="platform_send_message",
                                arguments={"session_id": "victim", "text": f"spam {case}"}, task_id=f"t-{case}",
                                delivery=delivery)
    assert result.status == "denied" and result.error is not None and result.error.code == "operator_only", result
    await chat_caught_up(stack, snc, subjects, case)
    assert not [r for r in sent(stack.chat_log) if r.get("text") == f"spam {case}"]


async def test_a_synthetic_friend_request_runs_end_to_end_and_the_app_does_nothing(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"fr-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["friend.*"], "tools": [],
        "playbook": {"steps": [
            {"id": "who", "tool": "event_get_actor", "arguments": {}},
            {"id": "answer", "tool": "event_respond_friend_request",
             "arguments": {"accept": True, "message": "hello {{ event.actor.id }}"}},
        ], "answer": "accepted {{ event.actor.id }}"}})
    await bind(snc, subjects, f"b-{case}", "friend.request_received", "agent", f"a-{case}", case=case)
    before = len(sent(stack.chat_log))
    doc = event("friend.request_received", {"case": case, "note": "hi"}, subject_message=False, synthetic=True)
    doc["payload"]["subject"] = {"kind": "friend_request", "id": f"fr-{case}"}
    await publish_events(snc.jetstream(), subjects, [doc])
    done = await settled(snc, subjects, task_id_of(doc, f"b-{case}"), states=FINAL)
    assert done["state"] == "succeeded" and done["synthetic"] is True, json.dumps(done, indent=1)[:3000]
    assert "synthetic" in (done["transitions"][-1]["reason"] or "")
    answer = next(s for s in done["steps"] if s["id"] == "answer")
    assert answer["classification"] == "suppressed", answer
    assert answer["structured"]["would_call"] and answer["structured"]["arguments"]["accept"] is True, answer
    assert done["delivered"] is False
    await quiet(snc, subjects)  # the run is acknowledged: nothing of it is still on its way
    marker = await chat_caught_up(stack, snc, subjects, case)
    # the chat app's side-effect log grew by our marker alone
    assert [r["text"] for r in sent(stack.chat_log)[before:]] == [marker]
