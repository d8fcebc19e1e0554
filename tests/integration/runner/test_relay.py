"""Cross-system relay through the real stack: alarm → asset search → asset profile → an answer
citing both sources, delivered to the chat the event came from; with the playbook and with the
llm agent (driven by the scripted OpenAI-compatible server over HTTP)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.fakes.openai_server import Conversation, Turn
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import (
    ALARMS,
    ASSETS,
    apply,
    bind,
    event,
    poll,
    publish_events,
    sent,
    settled,
    task_id_of,
)

RELAY_TOOLS = [f"{ALARMS}.get_alarm", f"{ASSETS}.search_assets", f"{ASSETS}.get_asset_profile"]

PLAYBOOK: dict[str, Any] = {
    "steps": [
        {"id": "alarm", "tool": f"{ALARMS}.get_alarm", "arguments": {"alarm_id": "{{ event.data.alarm_id }}"}},
        {"id": "search", "tool": f"{ASSETS}.search_assets",
         "arguments": {"device_name": "{{ steps.alarm.structured.device.name }}"}},
        {"id": "profile", "tool": f"{ASSETS}.get_asset_profile", "when": "steps.search.structured.count > 0",
         "arguments": {"asset_code": "{{ steps.search.structured['items'][0].assetCode }}"}},
    ],
    "answer": (
        "Alarm {{ steps.alarm.structured.alarm_id }} ({{ steps.alarm.structured.level }}) on "
        "{{ steps.alarm.structured.device.name }}: {{ steps.alarm.structured.message }} [source: alarm system]. "
        "{% if steps.profile.ok %}Asset {{ steps.profile.structured.assetCode }} {{ steps.profile.structured.name }}, "
        "{{ steps.profile.structured.location }}, owner {{ steps.profile.structured.owner }} [source: asset register]."
        "{% else %}No asset is registered for {{ steps.alarm.structured.device.name }} in the asset register."
        "{% endif %}"
    ),
}


async def _relay(snc: NATS, subjects: Subjects, stack: RunnerStack, agent: dict[str, Any], alarm_id: str,
                 case: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    await apply(snc, subjects, "agents", agent)
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", agent["id"], case=case)
    session = f"group-{case}"
    doc = event("message.received", {"text": f"what about alarm {alarm_id}?", "alarm_id": alarm_id, "case": case},
                session_id=session)
    await publish_events(snc.jetstream(), subjects, [doc])
    task = await settled(snc, subjects, task_id_of(doc, f"b-{case}"))
    replies = await poll(lambda: _sent_to(stack, session), what=f"a reply in {session}", timeout=10)
    return task, replies


async def _sent_to(stack: RunnerStack, session: str) -> list[dict[str, Any]]:
    return [r for r in sent(stack.chat_log) if r.get("session_id") == session]


def _tool_steps(task: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in task["steps"] if s["kind"] == "tool"]


async def test_the_playbook_relays_an_alarm_to_its_asset_and_replies_citing_both(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"pb-{uuid.uuid4().hex[:6]}"
    agent = {"kind": "Agent", "id": f"relay-{case}", "agent_kind": "playbook", "events": ["message.*"],
             "tools": RELAY_TOOLS, "playbook": PLAYBOOK}
    task, replies = await _relay(snc, subjects, stack, agent, "ALM-1001", case)
    assert task["state"] == "succeeded", json.dumps(task, indent=1)[:4000]
    assert task["delivered"] is True
    assert [s["id"] for s in _tool_steps(task)] == ["alarm", "search", "profile"]
    assert all(s["classification"] == "ok" for s in _tool_steps(task))
    profile = next(s for s in task["steps"] if s["id"] == "profile")
    assert profile["arguments"] == {"asset_code": "AS-0001"}
    assert profile["business_ids"].get("assetCode") == "AS-0001"
    assert len(replies) == 1
    text = replies[0]["text"]
    assert "ALM-1001" in text and "[source: alarm system]" in text
    assert "AS-0001" in text and "[source: asset register]" in text
    delivery = next(s for s in task["steps"] if s["id"] == "deliver")
    assert delivery["classification"] == "ok" and delivery["kind"] == "delivery"


async def test_the_playbook_keeps_the_alarm_and_says_the_asset_is_missing(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"pbx-{uuid.uuid4().hex[:6]}"
    agent = {"kind": "Agent", "id": f"relay-{case}", "agent_kind": "playbook", "events": ["message.*"],
             "tools": RELAY_TOOLS, "playbook": PLAYBOOK}
    task, replies = await _relay(snc, subjects, stack, agent, "ALM-1002", case)
    assert task["state"] == "succeeded", json.dumps(task, indent=1)[:4000]
    profile = next(s for s in task["steps"] if s["id"] == "profile")
    assert profile["status"] == "skipped"
    text = replies[0]["text"]
    assert "ALM-1002" in text and "Fan F-9" in text and "7.1" in text
    assert "No asset is registered for Fan F-9" in text


def relay_script(chat: Conversation) -> Turn:
    """The model's plan, scripted: alarm → search by the device's name → profile if found → answer."""
    results = chat.tool_results()
    if chat.turn == 1:
        return chat.call("get_alarm", alarm_id=chat.event["data"]["alarm_id"])
    alarm = results[0]["result"]
    if chat.turn == 2:
        return chat.call("search_assets", device_name=alarm["device"]["name"])
    found = results[1]["result"]
    if chat.turn == 3 and found["count"] > 0:
        return chat.call("get_asset_profile", asset_code=found["items"][0]["assetCode"])
    head = f"Alarm {alarm['alarm_id']} on {alarm['device']['name']}: {alarm['message']} [source: alarm system]."
    if found["count"] == 0:
        return chat.answer(f"{head} No asset is registered for {alarm['device']['name']} [asset register].")
    profile = results[2]["result"]
    return chat.answer(f"{head} Asset {profile['assetCode']} at {profile['location']} [source: asset register].")


async def test_the_llm_agent_relays_through_tool_calls_the_model_proposes(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"llm-{uuid.uuid4().hex[:6]}"
    model = f"relay-{case}"
    stack.fake.script(model, relay_script)
    await apply(snc, subjects, "skills", {"kind": "Skill", "id": f"confirm-{case}",
                                          "text": "Confirm the device first, then read its asset."})
    agent = {"kind": "Agent", "id": f"relay-{case}", "agent_kind": "llm", "events": ["message.*"],
             "tools": RELAY_TOOLS, "model": {"base_url": stack.fake.base_url, "model": model},
             "prompt": "You relay alarms to asset records.",
             "skills": [f"confirm-{case}"], "tool_result_limit": 2000}
    task, replies = await _relay(snc, subjects, stack, agent, "ALM-1001", case)
    assert task["state"] == "succeeded", json.dumps(task, indent=1)[:4000]
    names = [s["name"] for s in _tool_steps(task)]
    assert names == RELAY_TOOLS
    assert [s["id"] for s in task["steps"] if s["kind"] == "model"] == ["m1", "m2", "m3", "m4"]
    text = replies[0]["text"]
    assert "ALM-1001" in text and "AS-0001" in text and "[source: asset register]" in text
    requests = stack.fake.requests_for(model)
    assert len(requests) == 4
    first = requests[0]
    assert "You relay alarms to asset records." in first.system
    assert "Confirm the device first" in first.system and "advice, not permissions" in first.system
    offered = {t["function"]["name"] for t in first.tools}
    assert "event_history" in offered and "event_reply" in offered
    assert first.event["type"] == "message.received" and first.event["data"]["alarm_id"] == "ALM-1001"


async def test_the_llm_agent_says_the_asset_is_missing(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"llmx-{uuid.uuid4().hex[:6]}"
    model = f"relay-{case}"
    stack.fake.script(model, relay_script)
    agent = {"kind": "Agent", "id": f"relay-{case}", "agent_kind": "llm", "events": ["message.*"],
             "tools": RELAY_TOOLS, "model": {"base_url": stack.fake.base_url, "model": model}}
    task, replies = await _relay(snc, subjects, stack, agent, "ALM-1002", case)
    assert task["state"] == "succeeded", json.dumps(task, indent=1)[:4000]
    assert [s["name"] for s in _tool_steps(task)] == RELAY_TOOLS[:2]
    assert "No asset is registered for Fan F-9" in replies[0]["text"] and "ALM-1002" in replies[0]["text"]
