"""`request_action`, the llm agent's runner-local tool: `interaction.requested` asks the user
through the chat app and the answer resumes the run with the chosen value as the tool result;
any other action is recorded in the step log and never executed."""

from __future__ import annotations

import json
import uuid
from typing import Any

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.fakes.openai_server import Conversation, Turn
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
from tests.harness.tool_calls import operator_call

FINAL = ("succeeded", "failed", "partial", "cancelled", "unverified")


def llm_agent(stack: RunnerStack, case: str) -> dict[str, Any]:
    return {"kind": "Agent", "id": f"a-{case}", "agent_kind": "llm", "events": ["*"], "tools": [f"{ECHO}.echo"],
            "model": {"base_url": stack.fake.base_url, "model": case}}


async def _start(snc: NATS, subjects: Subjects, stack: RunnerStack, case: str, session: str) -> str:
    await apply(snc, subjects, "agents", llm_agent(stack, case))
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "which pump?"}, session_id=session)
    await publish_events(snc.jetstream(), subjects, [doc])
    return task_id_of(doc, f"b-{case}")


async def test_request_action_asks_the_user_and_the_answer_resumes_the_model(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"llmix-{uuid.uuid4().hex[:6]}"
    session = f"s-{case}"

    def script(chat: Conversation) -> Turn:
        if chat.turn == 1:
            return chat.call("request_action", action="interaction.requested",
                             question="Which pump do you mean?", options=["Pump P-101", "Pump P-102"])
        return chat.answer(f"You chose {chat.last_result()['result']['answer']}.")

    stack.fake.script(case, script)
    task_id = await _start(snc, subjects, stack, case, session)

    waiting = await settled(snc, subjects, task_id)
    assert waiting["state"] == "awaiting_approval", json.dumps(waiting, indent=1)[:3000]
    interaction_id = waiting["interaction_id"]
    assert interaction_id and task_id in interaction_id
    asked = next(s for s in waiting["steps"] if s["kind"] == "interaction")
    assert asked["status"] == "started" and asked["structured"]["options"] == ["Pump P-101", "Pump P-102"]
    assert len(stack.fake.requests_for(case)) == 1  # the model is not asked again while the task waits

    listed = await operator_call(snc, subjects, f"{CHAT}.list_sent", {"session_id": session})
    sent_messages = [r for r in listed["items"] if r.get("kind") == "message"]
    assert len(sent_messages) == 1, listed
    texts = [r["text"] for r in sent_messages]
    assert "Which pump do you mean?" in texts[0] and "1. Pump P-101" in texts[0] and "2. Pump P-102" in texts[0]
    # the id beside the text, never in it; the hint in the agent's language (the default)
    assert sent_messages[0]["interaction_id"] == interaction_id and interaction_id not in texts[0]
    assert texts[0].endswith("（请回复选项编号）")

    await operator_call(snc, subjects, f"{CHAT}.simulate_interaction_answer",
                        {"interaction_id": interaction_id, "value": "2", "session_id": session})
    done = await settled(snc, subjects, task_id, states=FINAL)
    assert done["state"] == "succeeded", json.dumps(done, indent=1)[:3000]
    assert done["answer"] == "You chose Pump P-102."

    requests = stack.fake.requests_for(case)
    assert len(requests) == 2  # the first turn came from the step log on resume, not from the model again
    tool_messages = [m for m in requests[1].messages if m["role"] == "tool"]
    assert len(tool_messages) == 1 and "Pump P-102" in tool_messages[0]["content"]
    assert json.loads(tool_messages[0]["content"])["result"]["choice"] == "Pump P-102"
    answered = next(s for s in done["steps"] if s["kind"] == "interaction")
    assert answered["structured"]["choice"] == "Pump P-102" and "user u1" in answered["note"]

    async def final_replies() -> list[dict[str, Any]]:
        return [r for r in sent(stack.chat_log)
                if r.get("session_id") == session and "You chose Pump P-102" in r.get("text", "")]

    await poll(final_replies, what="the final reply")
    await quiet(snc, subjects)  # a second reply (a run or answer handled again) would be sent by now
    assert len(await final_replies()) == 1


async def test_any_other_requested_action_is_recorded_and_not_executed(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"llmact-{uuid.uuid4().hex[:6]}"
    session = f"s-{case}"

    def script(chat: Conversation) -> Turn:
        if chat.turn == 1:
            return chat.call("request_action", action="delete.everything")
        result = chat.last_result()
        return chat.answer(f"{result['status']}: {result['result']}")

    stack.fake.script(case, script)
    task_id = await _start(snc, subjects, stack, case, session)
    done = await settled(snc, subjects, task_id, states=FINAL)
    assert done["state"] == "succeeded", json.dumps(done, indent=1)[:3000]
    assert done["answer"].startswith("recorded:") and "not executed" in done["answer"]
    [action] = [s for s in done["steps"] if s["kind"] == "action"]
    assert action["name"] == "delete.everything" and action["status"] == "finished"
    assert action["note"] == "recorded, not executed"
    assert action["arguments"] == {"action": "delete.everything"}
    # nothing was executed: no tool call, no interaction, no question sent
    assert not [s for s in done["steps"] if s["kind"] in ("tool", "interaction")]
    assert done["interaction_id"] is None
