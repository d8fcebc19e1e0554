"""A first `aurora dev` as a person runs it, with a model configured (the README's settings,
pointed at a scripted OpenAI-compatible server):

- a message sent the moment the chat page first accepts one is answered: the apps that emit
  events start only once the demo's bindings are in place, so it is not routed `route_not_found`;
- the dev stack applies deploy/demo/llm/ (whose skill is defined after the agent naming it), and
  an llm agent answers the chat with the model's words;
- `aurora apply -f deploy/demo/llm/`, the path the README gives, applies the folder in
  dependency order: skills before the agents naming them, agents before the bindings.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from aurora_cli.localnats import free_port
from tests.fakes.openai_server import Conversation, FakeOpenAI, Turn
from tests.harness.chat_webhook import PageUsers
from tests.harness.dev_stack import DevProcess
from tests.harness.waiting import poll_sync

MODEL = "demo-model"
MODEL_ANSWER = "C-3 的告警与资产档案（模型的回答）"


@pytest.fixture
def model() -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI().start()
    fake.script(MODEL, lambda chat: _answer(chat))
    try:
        yield fake
    finally:
        fake.stop()


def _answer(_: Conversation) -> Turn:
    return Turn(content=MODEL_ANSWER)


def _replies(base: str, conversation: str) -> list[str]:
    items = httpx.get(f"{base}/conversations/{conversation}", timeout=10).json()["items"]
    return [str(i["text"]) for i in items if i["kind"] == "message" and i["direction"] == "out"]


def test_the_first_message_the_page_accepts_is_answered_and_the_llm_demo_is_applied(
        tmp_path: Path, model: FakeOpenAI) -> None:
    chat_port = free_port()
    base = f"http://127.0.0.1:{chat_port}"
    env = {"AURORA_MODEL_BASE_URL": model.base_url, "AURORA_MODEL": MODEL, "CHAT_WEB_PORT": str(chat_port)}
    dev = DevProcess(tmp_path / "dev", free_port(), tmp_path / "aurora-dev.out", env=env)
    page = PageUsers(base)
    first = f"group_first_{uuid.uuid4().hex[:6]}"
    try:
        def accepted() -> dict[str, Any] | None:
            assert dev.process.poll() is None, dev.output()
            try:
                reply = page.post({"type": "message.received", "session_id": first, "text": "你好"})
            except httpx.TransportError:
                return None  # the page is not serving yet
            if reply.status_code == 503:  # the platform has not connected to the chat app yet
                return None
            assert reply.status_code == 202, reply.text
            found: dict[str, Any] = reply.json()
            return found

        poll_sync(accepted, timeout=180, what="the chat page accepting a message", interval=0.05)
        try:
            poll_sync(lambda: _replies(base, first) or None, timeout=60, what="an answer to the first message")
        except AssertionError:
            raise AssertionError(f"the first message was never answered:\n{dev.output()[-6000:]}") from None

        dev.wait_until_up()
        output = dev.output()
        assert "were not applied" not in output, output[-4000:]
        cli = dev.cli_here()
        agents = _ids(cli("get", "agents", "--json"))
        assert {"relay-llm", "rule-llm", "greeter-llm", "friend-llm"} <= agents, agents
        assert "confirm-device-first" in _ids(cli("get", "skills", "--json"))

        # The llm relay takes the chat's alarm questions: the model's answer reaches the page.
        relay = f"group_llm_{uuid.uuid4().hex[:6]}"
        page.post({"type": "message.received", "session_id": relay, "text": "设备 C-3 最近的告警和资产档案"})
        poll_sync(lambda: MODEL_ANSWER in _replies(base, relay) or None, timeout=60, what="the model's answer")
        assert model.requests_for(MODEL), "the runner never asked the model"

        # The README's path: the folder as shipped, its skill after the agent that names it.
        assert cli("delete", "agent", "relay-llm").returncode == 0
        assert cli("delete", "skill", "confirm-device-first").returncode == 0
        applied = dev.cli()("apply", "-f", "deploy/demo/llm/")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        lines = applied.stdout.splitlines()
        created = [line.split(" (")[0] for line in lines if " created" in line]  # a skill's "(version n)"
        assert created == ["skill/confirm-device-first created", "agent/relay-llm created"], lines
        kinds = [line.split("/", 1)[0] for line in lines]
        assert kinds == sorted(kinds, key=["skill", "agent", "binding"].index), lines
    finally:
        page.close()
        dev.kill()


def _ids(done: subprocess.CompletedProcess[str]) -> set[str]:
    assert done.returncode == 0, done.stdout + done.stderr
    return {item["id"] for item in json.loads(done.stdout)["items"]}
