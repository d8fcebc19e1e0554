"""One event, one trace: the real processes export their spans over OTLP/HTTP to a receiver in
the test, and the spans of a chat message answered by an `llm` agent form one tree —
app notification (gateway) → bridge → router → runner → model, and the runner's tool calls →
gateway → supervisor relay → app, the reply (`event_reply`, sent through the chat app)
included — each span the child of the one before."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from nats.aio.client import Client as NATS

from shared.contracts.envelope import Header, Source
from shared.contracts.subjects import Subjects
from shared.contracts.toolcall import ToolCallEnvelope, ToolCallRequest, decode_result
from tests.fakes.openai_server import Conversation, FakeOpenAI, Turn
from tests.harness.clients import nats_client
from tests.harness.otlp import OtlpReceiver, ReceivedSpan
from tests.harness.processes import ServiceProcess
from tests.harness.runner_stack import chat_log_of, runner_stack
from tests.harness.runs import CHAT, ECHO, apply, sent
from tests.harness.stack import Stack
from tests.harness.waiting import poll

SESSION = "trace-room"


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    running = OtlpReceiver().start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    running = FakeOpenAI().start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
def traced(tmp_path: Path, receiver: OtlpReceiver) -> Iterator[tuple[Stack, dict[str, ServiceProcess], Path]]:
    with runner_stack(tmp_path, runners=1, env=receiver.env()).running() as stack:
        yield stack, stack.processes, chat_log_of(tmp_path)


async def _simulate_message(nc: NATS, subjects: Subjects, text: str) -> None:
    """The chat app emits `message.received` as if a person wrote it (an operator call)."""
    request = ToolCallEnvelope(
        header=Header(method="tools/call", message_id=str(uuid.uuid4()), timestamp="2026-12-01T00:00:00+00:00",
                      source=Source(app="tests")),
        payload=ToolCallRequest(tool=f"{CHAT}.simulate_message", arguments={"session_id": SESSION, "text": text}))
    reply = decode_result((await nc.request(subjects.operator_tool_call, msgspec.json.encode(request),
                                            timeout=30)).data)
    assert reply.payload.status == "ok", reply.payload


def _parent(spans: dict[str, ReceivedSpan], span: ReceivedSpan) -> ReceivedSpan:
    assert span.parent_id is not None, f"{span.service} {span.name} has no parent"
    assert span.parent_id in spans, f"the parent of {span.service} {span.name} was not exported"
    return spans[span.parent_id]


async def test_one_event_is_one_trace_from_the_app_to_the_reply(
        traced: tuple[Stack, dict[str, ServiceProcess], Path], receiver: OtlpReceiver, fake: FakeOpenAI) -> None:
    server, _, chat_log = traced
    subjects = Subjects("amp")
    model = f"trace-{uuid.uuid4().hex[:6]}"

    def script(chat: Conversation) -> Turn:
        if chat.turn == 1:
            return chat.call("echo", payload={"look": "up"})
        return chat.answer("looked it up")

    fake.script(model, script)
    async with nats_client(server.url) as nc:
        await apply(nc, subjects, "agents", {
            "kind": "Agent", "id": "tracer", "agent_kind": "llm", "events": ["message.received"],
            "tools": [f"{ECHO}.echo"], "model": {"base_url": fake.base_url, "model": model}})
        await apply(nc, subjects, "bindings", {
            "kind": "Binding", "id": "b-tracer", "event_pattern": "message.received", "target_type": "agent",
            "target_id": "tracer", "priority": 10})
        await _simulate_message(nc, subjects, "what is up?")

        async def replied() -> list[dict[str, Any]]:
            return [m for m in sent(chat_log) if m.get("session_id") == SESSION]

        [reply] = await poll(replied, timeout=60, what="the agent's reply in the chat")
        assert reply["text"] == "looked it up"

    def tree() -> dict[str, ReceivedSpan] | None:
        """The trace once it is whole: every span's parent exported, the reply's relay among them,
        and the bridge's span of a task event under the run (the bridge exports it on its own time)."""
        rooted = [s for s in receiver.spans if s.service == "aurora-mcp-gateway" and s.name.startswith("aurora/event")]
        if not rooted:
            return None
        spans = {s.span_id: s for s in receiver.trace(rooted[-1].trace_id)}
        if any(s.parent_id is not None and s.parent_id not in spans for s in spans.values()):
            return None
        replies = [s for s in spans.values() if s.service == "aurora-app-supervisor" and s.parent_id
                   and spans[s.parent_id].name == "tools/call event_reply"]
        runs = {s.span_id for s in spans.values() if s.service == "aurora-runner" and s.name == "process run"}
        task_events = [s for s in spans.values() if s.service == "aurora-event-bridge" and s.parent_id in runs]
        return spans if replies and task_events else None

    async def whole() -> dict[str, ReceivedSpan] | None:
        return tree()

    spans = await poll(whole, timeout=30, what="the whole trace at the receiver")
    by_service: dict[str, list[ReceivedSpan]] = {}
    for span in spans.values():
        by_service.setdefault(span.service, []).append(span)
    dump = json.dumps([[s.service, s.name, s.span_id, s.parent_id] for s in spans.values()], indent=0)

    [notification] = [s for s in by_service["aurora-mcp-gateway"] if s.name.startswith("aurora/event")]
    assert notification.parent_id is None, dump  # the trace starts where the app's event came in
    [bridge] = [s for s in by_service["aurora-event-bridge"] if s.parent_id == notification.span_id]
    assert bridge.name == "process signal", dump
    assert bridge.attributes["messaging.system"] == "nats"
    assert bridge.attributes["aurora.event.type"] == "message.received"
    [router] = [s for s in by_service["aurora-router"] if s.parent_id == bridge.span_id]
    assert router.attributes["aurora.binding.id"] == "b-tracer"
    assert router.attributes["aurora.route.status"] == "dispatched"

    runner = by_service["aurora-runner"]
    [run] = [s for s in runner if s.name == "process run"]
    assert _parent(spans, run) == router, dump
    # The task's own events (task.running, …) and the tool.* events continue the trace too.
    assert any(s.parent_id == run.span_id for s in by_service["aurora-event-bridge"]), dump
    models = [s for s in runner if s.name == f"chat {model}"]
    assert len(models) == 2 and all(_parent(spans, m) == run for m in models), dump
    assert models[0].attributes["gen_ai.request.model"] == model
    assert models[0].attributes["gen_ai.operation.name"] == "chat"
    assert isinstance(models[0].attributes.get("gen_ai.usage.input_tokens"), int)

    calls = {s.name: s for s in runner if s.name.startswith("tools/call ")}
    # The reply is the platform tool `event_reply`, which the gateway sends through the chat app.
    assert set(calls) == {f"tools/call {ECHO}.echo", "tools/call event_reply"}, dump
    for name, call in calls.items():
        assert _parent(spans, call) == run, dump
        [served] = [s for s in by_service["aurora-mcp-gateway"] if s.parent_id == call.span_id]
        assert served.name == name and served.attributes["aurora.tool.status"] == "ok", dump
        assert served.attributes["gen_ai.tool.name"] == name.removeprefix("tools/call ")
        [relayed] = [s for s in by_service["aurora-app-supervisor"] if s.parent_id == served.span_id]
        assert relayed.name == "relay c2s", dump
    assert not any(s.error for s in spans.values()), dump
