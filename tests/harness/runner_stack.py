"""The runner tests' stack, as a `StackBuilder`: the bridge, the supervisor with the chat, alarms,
assets and echo apps, the gateway, the router and runners that wait seconds, not minutes."""

from __future__ import annotations

import json
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS

from tests.fakes.openai_server import FakeOpenAI
from tests.harness.apps_config import APPS, ECHO, PYTHON, stdio
from tests.harness.processes import ServiceProcess
from tests.harness.stack import Stack, StackBuilder

CHAT = "test.chat"
ALARMS = "test.alarms"
ASSETS = "test.assets"
# Short enough for quick recovery in tests, long enough to never fire on a healthy runner.
RUNNER_ENV = {"AURORA_RUNNER_ACK_WAIT_SECONDS": "3", "AURORA_RUNNER_TOOL_TIMEOUT_SECONDS": "5",
              "AURORA_RUNNER_CONCURRENCY": "16", "TEST_MODEL_KEY": "sk-test-123",
              # a run waiting for an unavailable target tries again soon: tests wait seconds, not minutes
              "AURORA_RUNNER_RETRY_BASE_SECONDS": "0.2", "AURORA_RUNNER_RETRY_MAX_SECONDS": "1"}
# Which chat-app tools implement each platform capability (as apps/config.yml declares them).
CHAT_PLATFORM = {"reply": "send_message", "react": "react", "respond_friend_request": "respond_friend_request",
                 "get_actor": "get_user_info", "send_message": "send_message"}


def stack_apps(chat_log: Path) -> dict[str, dict[str, Any]]:
    """A chat app that logs every message it sends, the alarm and asset systems of the
    cross-system relay, and the echo app (reads, a slow read, a counter)."""
    return {
        "chat": stdio([PYTHON, "-m", "apps.aurora_app_chat"], package=CHAT,
                      mcp={"env": {"CHAT_LOG_FILE": str(chat_log), "CHAT_WEB_PORT": "off"}}, platform=CHAT_PLATFORM),
        "alarms": stdio([PYTHON, str(APPS / "alarms_app.py")], package=ALARMS),
        "assets": stdio([PYTHON, str(APPS / "assets_app.py")], package=ASSETS,
                        mcp={"env": {"ASSETS_CALL_LOG": str(assets_calls_log(chat_log))}}),
        "echo": stdio([PYTHON, str(APPS / "echo_app.py")], package=ECHO,
                      mcp={"env": {"ECHO_COUNTER_FILE": str(chat_log.with_name("echo-counter.jsonl"))}}),
    }


def assets_calls_log(chat_log: Path) -> Path:
    """Where the stack's assets app writes down every call it answered (beside the chat log)."""
    return chat_log.with_name("assets-calls.jsonl")


def assets_calls(chat_log: Path, tool: str) -> list[dict[str, Any]]:
    """The arguments of every `tool` call the stack's assets app answered so far."""
    path = assets_calls_log(chat_log)
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return [call["arguments"] for call in map(json.loads, lines) if call["tool"] == tool]


def asset_chooser(agent_id: str) -> dict[str, Any]:
    return {
        "kind": "Agent", "id": agent_id, "agent_kind": "playbook", "events": ["message.received"],
        "tools": [f"{ASSETS}.search_assets", f"{ASSETS}.get_asset_profile"],
        "playbook": {"steps": [
            {"id": "p101", "tool": f"{ASSETS}.search_assets", "arguments": {"device_name": "Pump P-101"}},
            {"id": "p102", "tool": f"{ASSETS}.search_assets", "arguments": {"device_name": "Pump P-102"}},
            {"id": "pick", "kind": "interaction", "question": "Several assets match “pump”: which one do you mean?",
             "options": "{{ steps.p101.structured['items'] + steps.p102.structured['items'] }}",
             "when": "{{ (steps.p101.structured['items'] + steps.p102.structured['items']) | length > 1 }}"},
            {"id": "profile", "tool": f"{ASSETS}.get_asset_profile",
             "arguments": {"asset_code": "{{ steps.pick.structured.choice.assetCode }}"}},
        ], "answer": "{{ steps.profile.structured.name }} ({{ steps.pick.structured.choice.assetCode }}) "
                     "is in {{ steps.profile.structured.location }}"}}


def chat_log_of(folder: Path) -> Path:
    """The chat app's record of what it sent, in a `runner_stack`'s folder."""
    return folder / "chat-sent.jsonl"


def runner_stack(folder: Path, *, runners: int, runner_env: dict[str, str] | None = None,
                 env: dict[str, str] | None = None) -> StackBuilder:
    """`env`: more variables for every service (e.g. where to export traces)."""
    return (StackBuilder(folder).apps(stack_apps(chat_log_of(folder))).env(**(env or {}))
            .bridge().supervisor().gateway().router().runners(runners, **{**RUNNER_ENV, **(runner_env or {})}))


@dataclass
class RunnerStack:
    """A running `runner_stack`, the chat app's log and the fake model API its agents call."""

    running: Stack
    chat_log: Path
    model: FakeOpenAI | None = None

    @property
    def fake(self) -> FakeOpenAI:
        if self.model is None:
            raise AssertionError("this stack was started without a fake model API")
        return self.model

    @property
    def url(self) -> str:
        return self.running.url

    @property
    def processes(self) -> dict[str, ServiceProcess]:
        return self.running.processes

    @property
    def log_folder(self) -> Path:
        return self.running.log_folder

    def client(self, **options: Any) -> AbstractAsyncContextManager[NATS]:
        return self.running.client(**options)
