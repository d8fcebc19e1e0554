"""End to end: an llm agent bound to more tools than `AURORA_RUNNER_FIND_TOOLS_ABOVE`, all of a
remote app that speaks only the stateless 2026-07-28 protocol. The model (the scripted
OpenAI-compatible fake) first gets `find_tools` instead of the app's schemas, searches, gets the
found tool's schema on the next turn (and the one after), and calls it through the gateway."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.fakes.openai_server import Conversation, FakeOpenAI, Turn
from tests.harness.modern_apps import serving
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import (
    RUNNER_ENV,
    apply,
    bind,
    event,
    publish_events,
    settled,
    task_id_of,
)
from tests.harness.stack import StackBuilder

APP = "test.modern"
TOOLS = ["echo", "track_shipment", "convert_currency", "weather_forecast", "create_invoice", "public_holidays",
         "add_tool"]
BUILTIN = {"find_tools", "event_history", "request_action"}


@pytest.fixture(scope="module")
def modern_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunnerStack]:
    folder = tmp_path_factory.mktemp("find-tools")
    fake = FakeOpenAI().start()
    try:
        with serving(folder, "stateless") as app:
            apps = {"modern": {"package": APP, "mcp": {"transport": "streamable_http", "url": app.url}}}
            builder = StackBuilder(folder).apps(apps).bridge().gateway().router().runners(
                1, **RUNNER_ENV, AURORA_RUNNER_FIND_TOOLS_ABOVE="3")
            with builder.running() as running:
                yield RunnerStack(running, folder / "no-chat-app.jsonl", fake)
    finally:
        fake.stop()


@pytest.fixture
async def mnc(modern_stack: RunnerStack) -> AsyncIterator[NATS]:
    async with modern_stack.client() as client:
        yield client


def offered(chat: Conversation) -> set[str]:
    return {t["function"]["name"] for t in chat.tools}


async def test_find_tools_then_the_found_tool_is_offered_and_called_through_the_gateway(
        modern_stack: RunnerStack, mnc: NATS, subjects: Subjects) -> None:
    case = f"find-{uuid.uuid4().hex[:6]}"

    def script(chat: Conversation) -> Turn:
        if chat.turn == 1:
            return chat.call("find_tools", query="where is my parcel? track the shipment")
        if chat.turn == 2:
            return chat.call("track_shipment", tracking_number="SF1234567")
        return chat.answer(json.dumps(chat.last_result(), ensure_ascii=False))

    modern_stack.fake.script(case, script)
    agent = {"kind": "Agent", "id": f"a-{case}", "agent_kind": "llm", "events": ["*"],
             "tools": [f"{APP}.{name}" for name in TOOLS],
             "model": {"base_url": modern_stack.fake.base_url, "model": case}}
    await apply(mnc, subjects, "agents", agent)
    await bind(mnc, subjects, f"b-{case}", "message.received", "agent", agent["id"], case=case)
    # From the app itself, which delivers nothing: the run's answer is recorded in the task.
    doc = event("message.received", {"case": case, "text": "where is parcel SF1234567?"}, app=APP,
                subject_message=False)
    await publish_events(mnc.jetstream(), subjects, [doc])
    task = await settled(mnc, subjects, task_id_of(doc, f"b-{case}"), timeout=60)
    assert task["state"] == "succeeded", json.dumps({k: v for k, v in task.items() if k != "steps"}, indent=1)[:3000]

    first, second, third = modern_stack.fake.requests_for(case)
    assert offered(first) == BUILTIN  # the seven app schemas are not sent
    found = second.last_result()["result"]["found"]
    assert found[0]["name"].endswith("track_shipment"), found
    shipment = second.function("track_shipment")
    assert offered(second) == BUILTIN | {f["name"] for f in found} and shipment in offered(second)
    assert not any(name.endswith("convert_currency") for name in offered(second))  # not what was asked for
    assert shipment in offered(third)  # found stays offered
    schema = next(t for t in second.tools if t["function"]["name"] == shipment)["function"]["parameters"]
    assert "tracking_number" in schema["properties"]

    steps = {s["name"]: s for s in task["steps"] if s["kind"] == "tool"}
    assert steps["find_tools"]["classification"] == "ok" and steps["find_tools"]["side_effect"] == "read"
    called = steps[f"{APP}.track_shipment"]
    assert called["classification"] == "ok", called
    assert called["structured"]["carrier"] == "SF Express" and called["structured"]["tracking_number"] == "SF1234567"
    assert json.loads(task["answer"])["result"]["status"] == "in transit"
