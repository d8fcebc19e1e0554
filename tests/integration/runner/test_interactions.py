"""Interactions: a playbook asks the event's user to choose among several matching assets; the
question goes out through the chat app (`event_reply`, numbered options, the interaction id),
an `interaction.requested` event says so, the task waits; the user's answer
(`simulate_interaction_answer` → `interaction.submitted`) resumes it with the chosen asset."""

from __future__ import annotations

import json
import uuid
from typing import Any

from nats.aio.client import Client as NATS

from services.runner.tasks.interactions import interaction_id_for
from services.runner.tasks.resumer import DURABLE as RESUME
from shared.contracts.subjects import Subjects
from tests.harness.runner_stack import RunnerStack, asset_chooser
from tests.harness.runs import (
    CHAT,
    apply,
    assets_calls,
    bind,
    event,
    handled,
    poll,
    publish_events,
    quiet,
    sent,
    settled,
    stored_event,
    task_id_of,
)
from tests.harness.tool_calls import operator_call

PUMPS = ("Pump P-101", "Pump P-102")
ASKED = ("AS-0001", "AS-0002")


async def test_several_matching_assets_ask_the_user_and_the_answer_resumes_the_task(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"ix-{uuid.uuid4().hex[:6]}"
    session = f"s-{case}"
    requested = await snc.subscribe(subjects.event("aurora.runner", "interaction.requested"))
    await apply(snc, subjects, "agents", asset_chooser(f"a-{case}"))
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "where is the pump?"}, session_id=session)
    task_id = task_id_of(doc, f"b-{case}")

    def searches() -> list[dict[str, Any]]:
        return [a for a in assets_calls(stack.chat_log, "search_assets") if a["device_name"] in PUMPS]

    def profiles() -> list[dict[str, Any]]:
        return [a for a in assets_calls(stack.chat_log, "get_asset_profile") if a["asset_code"] in ASKED]

    searched_before, profiled_before = searches(), profiles()
    await publish_events(snc.jetstream(), subjects, [doc])
    waiting = await settled(snc, subjects, task_id)
    assert waiting["state"] == "awaiting_approval", json.dumps(waiting)[:3000]
    interaction_id = waiting["interaction_id"]
    assert interaction_id and task_id in interaction_id
    pick = next(s for s in waiting["steps"] if s["id"] == "pick")
    assert pick["kind"] == "interaction" and pick["status"] == "started"

    # the question went out through the chat app, with numbered options, the interaction id beside it
    listed = await operator_call(snc, subjects, f"{CHAT}.list_sent", {"session_id": session})
    sent_messages = [r for r in listed["items"] if r.get("kind") == "message"]
    assert len(sent_messages) == 1, listed
    texts = [r["text"] for r in sent_messages]
    assert "1. Circulation pump P-101" in texts[0] and "2. Circulation pump P-102" in texts[0]
    assert sent_messages[0]["interaction_id"] == interaction_id and interaction_id not in texts[0]
    announced = json.loads((await requested.next_msg(timeout=10)).data)
    while announced["payload"]["data"]["interaction_id"] != interaction_id:
        announced = json.loads((await requested.next_msg(timeout=10)).data)
    assert len(announced["payload"]["data"]["options"]) == 2

    await operator_call(snc, subjects, f"{CHAT}.simulate_interaction_answer",
                        {"interaction_id": interaction_id, "value": "2", "session_id": session})
    done = await settled(snc, subjects, task_id, states=("succeeded", "failed", "partial", "cancelled", "unverified"))
    assert done["state"] == "succeeded", json.dumps(done, indent=1)[:3000]
    assert "AS-0002" in done["answer"] and "Hall 2, line 4" in done["answer"]
    pick = next(s for s in done["steps"] if s["id"] == "pick")
    assert pick["structured"]["choice"]["assetCode"] == "AS-0002" and "user u1" in pick["note"]
    assert any("interaction" in (t["reason"] or "") and "answered by user u1" in t["reason"]
               for t in done["transitions"])
    # the searches reached the assets app once each, before the question: not again after the
    # answer; the chosen asset's profile once
    assert searches() == [*searched_before, {"device_name": "Pump P-101"}, {"device_name": "Pump P-102"}]
    assert profiles() == [*profiled_before, {"asset_code": "AS-0002"}]

    async def final_replies() -> list[dict[str, Any]]:
        return [r for r in sent(stack.chat_log) if r.get("session_id") == session and "AS-0002" in r.get("text", "")]

    await poll(final_replies, what="the final reply")

    # the same answer again does nothing: once the runners have handled it (stored, delivered and
    # acknowledged), the task, the asset calls and the replies are as they were
    await operator_call(snc, subjects, f"{CHAT}.simulate_interaction_answer",
                        {"interaction_id": interaction_id, "value": "1", "session_id": session})
    seq = await stored_event(snc, subjects, CHAT, "interaction.submitted", lambda d: (
        d["payload"]["data"] == {"interaction_id": interaction_id, "value": "1"}))
    await handled(snc, subjects, RESUME, through=seq)
    await quiet(snc, subjects)
    again = await settled(snc, subjects, task_id)
    assert again["answer"] == done["answer"] and again["transitions"] == done["transitions"]
    assert again["steps"] == done["steps"]
    assert len(searches()) == len(searched_before) + 2 and len(profiles()) == len(profiled_before) + 1
    assert len(await final_replies()) == 1  # one reply, also after everything settled
    await requested.unsubscribe()


async def test_an_answer_that_comes_before_its_task_waits_for_it_is_not_lost(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    """A bot answering at once, or a loaded runner slow to store its wait: the answer reaches the
    runners before the task is parked on the question (here, before the task is stored at all,
    as a playbook's task is at its wait), and comes back until it is."""
    case = f"ix-{uuid.uuid4().hex[:6]}"
    session = f"s-{case}"
    await apply(snc, subjects, "agents", asset_chooser(f"a-{case}"))
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "which pump?"}, session_id=session)
    task_id = task_id_of(doc, f"b-{case}")
    interaction_id = interaction_id_for(task_id, "pick")

    await operator_call(snc, subjects, f"{CHAT}.simulate_interaction_answer",
                        {"interaction_id": interaction_id, "value": "2", "session_id": session})

    async def came_early() -> bool:
        return any("an answer came before its task waits for it" in line and interaction_id in line
                   for name, process in stack.processes.items() if name.startswith("runner")
                   for line in process.logs().splitlines())

    await poll(came_early, what="a runner telling the early answer to come back")  # not acked: not dropped
    await publish_events(snc.jetstream(), subjects, [doc])
    done = await settled(snc, subjects, task_id, timeout=60,
                         states=("succeeded", "failed", "partial", "cancelled", "unverified"))
    assert done["state"] == "succeeded", json.dumps(done, indent=1)[:3000]
    assert "AS-0002" in done["answer"]
    pick = next(s for s in done["steps"] if s["id"] == "pick")
    assert pick["structured"]["choice"]["assetCode"] == "AS-0002" and "user u1" in pick["note"]
