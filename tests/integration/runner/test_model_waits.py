"""A model server that is not there yet is waited for, like a gateway: refused connections and
429/503 (its `Retry-After` honoured) make the run wait, durably, and ask again; a 400 fails at
once. An agent that spends its tool rounds without answering fails, and its user is told."""

from __future__ import annotations

import json
import uuid
from typing import Any

from nats.aio.client import Client as NATS

from aurora_cli.localnats import free_port
from shared.contracts.subjects import Subjects
from tests.fakes.openai_server import Conversation, FakeOpenAI, Turn
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import (
    ECHO,
    apply,
    bind,
    event,
    poll,
    publish_events,
    sent,
    settled,
    task,
    task_id_of,
)


def agent_on(base_url: str, case: str, **extra: Any) -> dict[str, Any]:
    return {"kind": "Agent", "id": f"a-{case}", "agent_kind": "llm", "events": ["*"], "tools": [f"{ECHO}.echo"],
            "model": {"base_url": base_url, "model": case, "timeout_seconds": 5}, **extra}


async def start(snc: NATS, subjects: Subjects, case: str, agent: dict[str, Any]) -> str:
    await apply(snc, subjects, "agents", agent)
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", agent["id"], case=case)
    doc = event("message.received", {"case": case, "text": "hello"}, session_id=f"g-{case}")
    await publish_events(snc.jetstream(), subjects, [doc])
    return task_id_of(doc, f"b-{case}")


def replies(stack: RunnerStack, case: str) -> list[str]:
    return [r["text"] for r in sent(stack.chat_log) if r.get("session_id") == f"g-{case}"]


async def test_a_model_server_that_comes_up_late_is_waited_for(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"late-{uuid.uuid4().hex[:6]}"
    late = FakeOpenAI(port=free_port())  # nothing listens there yet: connections are refused
    late.script(case, lambda chat: chat.answer("the model is up"))
    task_id = await start(snc, subjects, case, agent_on(late.base_url, case))

    async def waiting() -> dict[str, Any] | None:
        found = await task(snc, subjects, task_id)
        wait = (found or {}).get("retry")
        return found if wait and wait["code"] == "model_unreachable" and wait["tries"] >= 2 else None

    waited = await poll(waiting, timeout=30, what="the run waiting for the model server", interval=0.1)
    assert waited["state"] in ("queued", "running") and waited["retry"]["step"] == "m1"
    late.start()
    try:
        final = await settled(snc, subjects, task_id, timeout=40)
    finally:
        late.stop()
    assert final["state"] == "succeeded" and final["answer"] == "the model is up", json.dumps(final, indent=1)[:3000]
    assert final["delivered"] is True and replies(stack, case) == ["the model is up"]


async def test_a_503_with_retry_after_is_asked_again_no_sooner(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"busy-{uuid.uuid4().hex[:6]}"

    def script(chat: Conversation) -> Turn:
        if len(stack.fake.requests_for(case)) == 1:
            return Turn(status=503, headers={"Retry-After": "1"})
        return chat.answer("after the wait")

    stack.fake.script(case, script)
    final = await settled(snc, subjects, await start(snc, subjects, case, agent_on(stack.fake.base_url, case)))
    assert final["state"] == "succeeded" and final["answer"] == "after the wait", json.dumps(final, indent=1)[:3000]
    first, second = stack.fake.requests_for(case)  # no quick retry in between: the wait is the task's
    assert second.received_at - first.received_at >= 1.0
    assert final["retry"]["code"] == "model_unreachable" and "503" in final["retry"]["message"]


async def test_a_400_fails_at_once(stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"bad-{uuid.uuid4().hex[:6]}"
    stack.fake.script(case, lambda chat: Turn(status=400))
    final = await settled(snc, subjects, await start(snc, subjects, case, agent_on(stack.fake.base_url, case)))
    assert final["state"] == "failed" and final["error"]["code"] == "model_http_error", json.dumps(final)[:3000]
    assert "400" in final["error"]["message"] and final["retry"] is None
    assert len(stack.fake.requests_for(case)) == 1


async def test_spent_tool_rounds_without_an_answer_fail_and_the_user_is_told(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"spent-{uuid.uuid4().hex[:6]}"

    def script(chat: Conversation) -> Turn:  # keeps calling tools, even once none are offered
        return Turn(tool_calls=[{"id": f"c{chat.turn}", "type": "function",
                                 "function": {"name": "look_again", "arguments": "{}"}}])

    stack.fake.script(case, script)
    agent = agent_on(stack.fake.base_url, case, max_tool_rounds=2)
    final = await settled(snc, subjects, await start(snc, subjects, case, agent))
    assert final["state"] == "failed" and final["error"]["code"] == "max_tool_rounds", json.dumps(final)[:3000]
    assert final["delivered"] is True and final["answer"] is None
    told = replies(stack, case)
    assert len(told) == 1 and "2 轮工具调用已用完" in told[0], told  # in the agent's language (the default)
    assert len(stack.fake.requests_for(case)) == 3
