"""An app that asks for a model completion during a call (`sampling/createMessage`): the calling
llm agent's own model answers it (the fake OpenAI-compatible server), through the runners; a
playbook agent has no model and the app is told so; both are audited."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.fakes.openai_server import Conversation, Turn
from tests.harness.runs import (
    TERMINAL,
    apply,
    bind,
    event,
    poll,
    publish_events,
    settled,
    stored_events,
    task_id_of,
)
from tests.integration.elicit.helpers import ELICIT, ELICIT_HTTP, GENERATIONS, PROTOCOL, ElicitStack, protocol_of

SUMMARIZER = "You summarize in one line."


@pytest.fixture
def subjects() -> Subjects:
    return Subjects()


async def audited(nc: NATS, app: str, task_id: str) -> dict[str, Any]:
    async def found() -> list[dict[str, Any]]:
        return await stored_events(nc, f"amp.audit.{app.replace('.', '_')}", lambda doc: (
            doc.get("tool") == "sampling/createMessage" and doc.get("task_id") == task_id))
    return (await poll(found, what=f"the audit record of the sampling of {task_id}"))[0]


async def run(snc: NATS, subjects: Subjects, case: str, agent: dict[str, Any]) -> dict[str, Any]:
    await apply(snc, subjects, "agents", agent)
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", agent["id"], case=case)
    doc = event("message.received", {"case": case, "text": "summarize it"}, session_id=f"s-{case}")
    await publish_events(snc.jetstream(), subjects, [doc])
    return await settled(snc, subjects, task_id_of(doc, f"b-{case}"), timeout=40, states=TERMINAL)


@pytest.mark.parametrize("app", GENERATIONS)
async def test_the_calling_agents_model_answers_the_apps_sampling(stack: ElicitStack, snc: NATS, subjects: Subjects,
                                                                 app: str) -> None:
    assert await protocol_of(snc, app) == PROTOCOL[app]
    case = f"smp-{uuid.uuid4().hex[:6]}"
    model = f"sampler-{case}"

    def script(chat: Conversation) -> Turn:
        if chat.system == SUMMARIZER:  # the app's own request, relayed by the gateway and a runner
            return chat.answer(f"one line about: {chat.messages[-1]['content']}")
        if chat.turn == 1:
            return chat.call("summarize", text="a long report")
        return chat.answer(json.dumps(chat.last_result()))

    stack.fake.script(model, script)
    done = await run(snc, subjects, case, {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "llm", "events": ["*"], "tools": [f"{app}.summarize"],
        "model": {"base_url": stack.fake.base_url, "model": model}})
    assert done["state"] == "succeeded", json.dumps(done)[:3000]
    answer = json.loads(done["answer"])["result"]
    assert answer == {"sampled": True, "model": model, "text": "one line about: Summarize: a long report"}, answer
    [asked] = [r for r in stack.fake.requests_for(model) if r.system == SUMMARIZER]
    assert asked.body.get("tools") is None and asked.body["max_tokens"] == 64
    record = await audited(snc, app, done["id"])
    assert record["status"] == "ok" and record["agent"] == f"a-{case}" and model in record["output_summary"]


async def test_an_agent_without_a_model_is_refused(stack: ElicitStack, snc: NATS, subjects: Subjects) -> None:
    case = f"smpno-{uuid.uuid4().hex[:6]}"
    done = await run(snc, subjects, case, {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["message.received"],
        "tools": [f"{ELICIT}.summarize"],
        "playbook": {"steps": [{"id": "sum", "tool": f"{ELICIT}.summarize", "arguments": {"text": "x"}}],
                     "answer": "{{ steps.sum.structured.error }}"}})
    assert done["state"] == "succeeded", json.dumps(done)[:3000]
    assert "no_model" in done["answer"] and "playbook agent" in done["answer"], done["answer"]
    record = await audited(snc, ELICIT, done["id"])
    assert record["status"] == "denied" and record["error_code"] == "no_model", record


async def test_a_stateless_apps_refused_sampling_ends_its_call_saying_why(
        stack: ElicitStack, snc: NATS, subjects: Subjects) -> None:
    """In 2026-07-28 an answer has no error arm: the app cannot be told "no" and carry on, so the
    gateway ends the call with the reason (and audits the refusal as for a handshake app)."""
    case = f"smpst-{uuid.uuid4().hex[:6]}"
    done = await run(snc, subjects, case, {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["message.received"],
        "tools": [f"{ELICIT_HTTP}.summarize"],
        "playbook": {"steps": [{"id": "sum", "tool": f"{ELICIT_HTTP}.summarize", "arguments": {"text": "x"}}],
                     "answer": "{{ steps.sum.structured.error }}"}})
    assert done["state"] == "failed", json.dumps(done)[:3000]
    [called] = [s for s in done["steps"] if s["id"] == "sum"]
    assert called["classification"] == "tool_error" and called["error"]["code"] == "input_not_given", called
    assert called["error"]["message"] == (
        f"the gateway declined the app's sampling/createMessage (summary): no_model: agent a-{case} is a "
        "playbook agent: it has no model"), called
    record = await audited(snc, ELICIT_HTTP, done["id"])
    assert record["status"] == "denied" and record["error_code"] == "no_model", record
