"""The llm agent against the scripted OpenAI-compatible server: history on demand, the tool-round
budget, truncated results, refused proposals, API keys by variable name, model failures."""

from __future__ import annotations

import json
import uuid
from typing import Any

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.fakes.openai_server import Conversation, Turn
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import ECHO, apply, bind, event, publish_events, settled, task_id_of


def llm_agent(stack: RunnerStack, case: str, name: str, *, settings: dict[str, Any] | None = None,
              **extra: Any) -> dict[str, Any]:
    return {"kind": "Agent", "id": f"a-{case}", "agent_kind": "llm", "events": ["*"], "tools": [f"{ECHO}.echo"],
            "model": {"base_url": stack.fake.base_url, "model": name, **(settings or {})}, **extra}


async def _run(stack: RunnerStack, snc: NATS, subjects: Subjects, case: str, agent: dict[str, Any],
               earlier: list[dict[str, Any]] | None = None, session: str | None = None) -> dict[str, Any]:
    await apply(snc, subjects, "agents", agent)
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", agent["id"], case=case)
    doc = event("message.received", {"case": case, "text": "go"}, session_id=session or f"g-{case}")
    await publish_events(snc.jetstream(), subjects, [*(earlier or []), doc])
    return await settled(snc, subjects, task_id_of(doc, f"b-{case}"))


async def test_event_history_returns_earlier_events_of_the_session_on_demand(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"hist-{uuid.uuid4().hex[:6]}"
    session = f"g-{case}"
    earlier = [event("message.received", {"text": f"earlier {i}", "case": "not-bound"}, session_id=session)
               for i in range(3)]
    other = event("message.received", {"text": "another chat", "case": "not-bound"}, session_id=f"other-{case}")

    def script(chat: Conversation) -> Turn:
        if chat.turn == 1:
            assert "earlier 0" not in json.dumps(chat.messages)  # no history unless asked for
            return chat.call("event_history", limit=5)
        events = chat.last_result()["result"]["events"]
        return chat.answer(" | ".join(e["data"]["text"] for e in events))

    stack.fake.script(case, script)
    task = await _run(stack, snc, subjects, case, llm_agent(stack, case, case), [*earlier, other], session)
    assert task["state"] == "succeeded", json.dumps(task, indent=1)[:3000]
    assert task["answer"] == "earlier 0 | earlier 1 | earlier 2"
    history = next(s for s in task["steps"] if s["name"] == "event_history")
    assert history["side_effect"] == "read" and history["classification"] == "ok"


async def test_the_tool_round_budget_and_the_result_limit_hold(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"rounds-{uuid.uuid4().hex[:6]}"

    def script(chat: Conversation) -> Turn:
        if not chat.tools:  # the runner withdrew the tools: the budget is spent
            return chat.answer(f"stopped after {len(chat.tool_results())} calls")
        return chat.call("echo", payload={"blob": "x" * 5000})

    stack.fake.script(case, script)
    agent = llm_agent(stack, case, case, max_tool_rounds=2, tool_result_limit=300)
    task = await _run(stack, snc, subjects, case, agent)
    assert task["state"] == "succeeded", json.dumps(task, indent=1)[:3000]
    assert task["answer"] == "stopped after 2 calls"
    requests = stack.fake.requests_for(case)
    assert len(requests) == 3 and requests[0].tools and not requests[2].tools
    tool_messages = [m for m in requests[2].messages if m["role"] == "tool"]
    assert len(tool_messages) == 2
    assert all(len(m["content"]) <= 300 and "truncated" in m["content"] for m in tool_messages)
    assert "tool budget" in requests[2].messages[-1]["content"]


async def test_refused_proposals_go_back_to_the_model_and_the_run_goes_on(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"refuse-{uuid.uuid4().hex[:6]}"

    def script(chat: Conversation) -> Turn:
        if chat.turn == 1:
            return Turn(tool_calls=[
                {"id": "c1", "type": "function", "function": {"name": "launch_rockets", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": chat.function("echo"), "arguments": "{oops"}},
            ])
        return chat.answer(json.dumps([r["error"]["code"] for r in chat.tool_results()]))

    stack.fake.script(case, script)
    task = await _run(stack, snc, subjects, case, llm_agent(stack, case, case))
    assert task["state"] == "succeeded", json.dumps(task, indent=1)[:3000]
    assert json.loads(task["answer"]) == ["unknown_tool", "invalid_arguments"]
    assert [s["classification"] for s in task["steps"] if s["kind"] == "tool"] == ["denied", "denied"]


async def test_the_api_key_comes_from_the_named_variable(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"key-{uuid.uuid4().hex[:6]}"
    stack.fake.script(case, lambda chat: chat.answer("authorized"), api_key="sk-test-123")
    agent = llm_agent(stack, case, case, settings={"api_key_env": "TEST_MODEL_KEY"})
    task = await _run(stack, snc, subjects, case, agent)
    assert task["state"] == "succeeded" and task["answer"] == "authorized", json.dumps(task, indent=1)[:3000]
    assert stack.fake.requests_for(case)[0].headers.get("Authorization") == "Bearer sk-test-123"

    case = f"nokey-{uuid.uuid4().hex[:6]}"
    agent = llm_agent(stack, case, case, settings={"api_key_env": "NOT_SET_ANYWHERE"})
    task = await _run(stack, snc, subjects, case, agent)
    assert task["state"] == "failed" and task["error"]["code"] == "no_api_key"
    assert "NOT_SET_ANYWHERE" in task["error"]["message"]


async def test_a_failing_model_fails_the_task_with_the_reason(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"down-{uuid.uuid4().hex[:6]}"
    stack.fake.script(case, lambda chat: Turn(status=500))  # a 503 is waited for: test_model_waits.py
    task = await _run(stack, snc, subjects, case, llm_agent(stack, case, case))
    assert task["state"] == "failed" and task["error"]["code"] == "model_http_error", json.dumps(task)[:2000]
    assert "500" in task["error"]["message"]
    assert len(stack.fake.requests_for(case)) == 3  # retried twice: a model call has no side effect


async def test_a_model_slower_than_its_timeout_fails_the_task(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"slow-{uuid.uuid4().hex[:6]}"
    stack.fake.script(case, lambda chat: Turn(content="too late", delay=2.0))
    task = await _run(stack, snc, subjects, case, llm_agent(stack, case, case, settings={"timeout_seconds": 0.5}))
    assert task["state"] == "failed" and task["error"]["code"] == "model_timeout", json.dumps(task)[:2000]
    assert "0.5s" in task["error"]["message"]
