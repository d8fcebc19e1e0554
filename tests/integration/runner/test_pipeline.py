"""A pipeline target: the message stage chain filter → pre-process → AI step → post-process →
output, on `message.*` events, through the real stack."""

from __future__ import annotations

import json
import uuid

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
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
    task_id_of,
)


async def test_the_stage_chain_shapes_filters_and_delivers(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"pl-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"ai-{case}", "agent_kind": "playbook", "events": ["message.*"],
        "tools": [f"{ECHO}.echo"],
        "playbook": {"steps": [{"id": "look", "tool": f"{ECHO}.echo", "arguments": {"query": "{{ text }}"}}],
                     "answer": "you asked: {{ steps.look.structured.query }}"}})
    await apply(snc, subjects, "pipelines", {"kind": "Pipeline", "id": f"p-{case}", "stages": [
        {"name": "only-questions", "type": "filter", "config": {"pattern": "\\?\\s*$"}},
        {"name": "clean", "type": "preprocess", "config": {"collapse_whitespace": True, "max_chars": 40}},
        {"name": "ai", "type": "agent", "config": {"agent": f"ai-{case}"}},
        {"name": "sign", "type": "postprocess", "config": {"template": "{{ text }} (via {{ event.source.app }})"}},
        {"name": "out", "type": "output"},
    ]})
    await bind(snc, subjects, f"b-{case}", "message.received", "pipeline", f"p-{case}", case=case)
    asked = event("message.received", {"case": case, "text": "  where   is pump P-101 ? "}, session_id=f"g-{case}-1")
    chatter = event("message.received", {"case": case, "text": "nice weather"}, session_id=f"g-{case}-2")
    await publish_events(snc.jetstream(), subjects, [asked, chatter])

    done = await settled(snc, subjects, task_id_of(asked, f"b-{case}"))
    assert done["state"] == "succeeded" and done["delivered"] is True, json.dumps(done, indent=1)[:3000]
    assert done["agent"] == f"ai-{case}"
    ids = [s["id"] for s in done["steps"]]
    assert ids == ["stage.only-questions", "stage.clean", "ai.look", "stage.ai", "stage.sign", "stage.out", "deliver"]
    look = next(s for s in done["steps"] if s["id"] == "ai.look")
    assert look["arguments"] == {"query": "where is pump P-101 ?"}
    replies = await poll(lambda: _sent(stack, f"g-{case}-1"), what="the pipeline's reply")
    assert [r["text"] for r in replies] == ["you asked: where is pump P-101 ? (via test.chat)"]

    filtered = await settled(snc, subjects, task_id_of(chatter, f"b-{case}"))
    assert filtered["state"] == "succeeded" and filtered["delivered"] is False
    assert "filtered" in filtered["transitions"][-1]["reason"]
    assert [s["id"] for s in filtered["steps"]] == ["stage.only-questions"]
    assert not sent_to(stack, f"g-{case}-2")


async def test_an_unknown_stage_type_fails_the_run_naming_it(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"plx-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "pipelines", {"kind": "Pipeline", "id": f"p-{case}", "stages": [
        {"name": "magic", "type": "telepathy"}]})
    await bind(snc, subjects, f"b-{case}", "message.received", "pipeline", f"p-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "hello?"}, session_id=f"g-{case}")
    await publish_events(snc.jetstream(), subjects, [doc])
    failed = await settled(snc, subjects, task_id_of(doc, f"b-{case}"))
    assert failed["state"] == "failed" and failed["error"]["code"] == "unknown_stage"
    assert "'magic'" in failed["error"]["message"] and "telepathy" in failed["error"]["message"]


def sent_to(stack: RunnerStack, session: str) -> list[dict[str, object]]:
    return [r for r in sent(stack.chat_log) if r.get("session_id") == session]


async def _sent(stack: RunnerStack, session: str) -> list[dict[str, object]]:
    return sent_to(stack, session)
