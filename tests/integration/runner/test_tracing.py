"""One trace from an event to everything it causes: the run, its tool calls and the `tool.*`
events the gateway reports carry the event's W3C trace id; an event that arrives without a
trace gets one rooted at it (the same one again for a redelivered signal)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from nats.aio.client import Client as NATS

from aurora_cli.commands.events import build_native_event
from shared.clock import now_iso
from shared.contracts.signals import NativeEventSignal
from shared.contracts.subjects import Subjects
from shared.nats.signal_publisher import publish_signal
from shared.observability.trace_context import root_trace
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import (
    ECHO,
    apply,
    bind,
    event,
    publish_events,
    settled,
    stored_events,
    task_id_of,
)


def trace_id(traceparent: str) -> str:
    return traceparent.split("-")[1]


async def events_where(nc: NATS, subject: str, wanted: Any, *, timeout: float = 20.0) -> list[dict[str, Any]]:
    """`stored_events`, once there is one (or the timeout passed)."""
    deadline = time.monotonic() + timeout
    while True:
        found = await stored_events(nc, subject, wanted)
        if found or time.monotonic() > deadline:
            return found


async def test_the_tool_events_of_a_run_carry_its_events_trace(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"tr-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["message.*"],
        "tools": [f"{ECHO}.echo"],
        "playbook": {"steps": [{"id": "look", "tool": f"{ECHO}.echo", "arguments": {"case": case}}],
                     "answer": "seen"}})
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "trace me"}, session_id=f"s-{case}")
    traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    doc["header"]["trace"] = {"traceparent": traceparent}
    await publish_events(snc.jetstream(), subjects, [doc])
    task_id = task_id_of(doc, f"b-{case}")
    done = await settled(snc, subjects, task_id, timeout=40)
    assert done["state"] == "succeeded", json.dumps(done)[:2000]

    tool_events = await events_where(snc, "amp.evt.*.tool.succeeded",
                                     lambda e: (e["payload"].get("data") or {}).get("task_id") == task_id)
    assert f"{ECHO}.echo" in {e["payload"]["data"]["tool"] for e in tool_events}, tool_events
    for tool_event in tool_events:  # the echo call and the reply's delivery alike
        assert trace_id(tool_event["header"]["trace"]["traceparent"]) == trace_id(traceparent)
        assert trace_id(tool_event["_headers"]["traceparent"]) == trace_id(traceparent)


async def test_an_event_without_a_trace_gets_one_rooted_at_it(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    signal_id = f"sig-{uuid.uuid4().hex[:10]}"
    event_doc = build_native_event("message.received", app_id="im.polaris.qq", data={"text": signal_id})
    native = NativeEventSignal(signal_id=signal_id, app="im.polaris.qq", observed_at=now_iso(), event=event_doc)
    await publish_signal(snc.jetstream(), subjects, native)
    [stored] = await events_where(snc, "amp.evt.im_polaris_qq.message.received",
                                  lambda e: e["payload"].get("data") == {"text": signal_id})
    expected = root_trace(stored["header"]["message_id"]).traceparent
    assert stored["header"]["trace"]["traceparent"] == expected
    assert stored["_headers"]["traceparent"] == expected
