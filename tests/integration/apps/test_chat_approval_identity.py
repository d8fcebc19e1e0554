"""Attack 6 end to end: a write asked for in the chat (the agent's `chat_approval`) waits for the
user who caused it; nobody else reaching the chat page can answer for them — not an unsigned post
naming that user, not another page session posting as them or signing in as them, not a request
for a rebound name — and another user's own answer decides nothing. Real processes: nats-server,
bridge, supervisor (the chat app with its page and webhook secret, the echo app), gateway,
router, runner."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import nats
import pytest
from nats.aio.client import Client as NATS

from services.mcp_gateway.approvals.in_chat import DURABLE as CHAT_APPROVALS
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.chat_webhook import SECRET_ENV, WEBHOOK_SECRET, AsyncPageUser
from tests.harness.runs import (
    APPS,
    CHAT,
    CHAT_PLATFORM,
    ECHO,
    PYTHON,
    RUNNER_ENV,
    apply,
    handled,
    sent,
    stdio,
    stored_event,
)
from tests.harness.stack import StackBuilder
from tests.harness.waiting import poll, poll_sync

SERVING = re.compile(r"chat page serving.*?(http://127\.0\.0\.1:\d+/)")


@dataclass
class ChatStack:
    nats_url: str
    page_url: str
    chat_log: Path
    counter: Path


@pytest.fixture(scope="module")
def chat_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChatStack]:
    folder = tmp_path_factory.mktemp("chat-identity")
    chat_log, counter = folder / "chat-sent.jsonl", folder / "echo-counter.jsonl"
    apps = {
        "chat": stdio([PYTHON, "-m", "apps.aurora_app_chat"], package=CHAT, platform=CHAT_PLATFORM, mcp={"env": {
            "CHAT_LOG_FILE": str(chat_log), "CHAT_WEB_PORT": "0", SECRET_ENV: WEBHOOK_SECRET}}),
        "echo": stdio([PYTHON, str(APPS / "echo_app.py")], package=ECHO,
                      mcp={"env": {"ECHO_COUNTER_FILE": str(counter)}}),
    }
    builder = StackBuilder(folder).apps(apps).bridge().supervisor().gateway().router().runners(1, **RUNNER_ENV)
    with builder.running() as stack:
        supervisor = stack["supervisor"]
        match = poll_sync(lambda: SERVING.search(supervisor.logs()), timeout=30, what="the chat page's address")
        yield ChatStack(stack.url, match.group(1), chat_log, counter)


@pytest.fixture
async def cnc(chat_stack: ChatStack) -> AsyncIterator[NATS]:
    client = await nats.connect(chat_stack.nats_url)
    try:
        yield client
    finally:
        await client.close()


def counted(stack: ChatStack, key: str) -> int:
    lines = stack.counter.read_text(encoding="utf-8").splitlines() if stack.counter.exists() else []
    return sum(1 for line in lines if json.loads(line)["key"] == key)


def answer(session: str, approval_id: str, value: str, **extra: str) -> dict[str, Any]:
    return {"type": "interaction.submitted", "session_id": session, "interaction_id": f"apr.{approval_id}",
            "value": value, **extra}


async def test_only_the_user_who_asked_can_answer_a_chat_approval(chat_stack: ChatStack, cnc: NATS,
                                                                  subjects: Subjects) -> None:
    case = uuid.uuid4().hex[:6]
    session, asker, intruder = f"group_{case}", f"asker-{case}", f"intruder-{case}"
    await apply(cnc, subjects, "agents", {
        "kind": "Agent", "id": f"count-{case}", "agent_kind": "playbook", "events": ["message.received"],
        "tools": [f"{ECHO}.counter_increment"], "chat_approval": True,
        "playbook": {"steps": [{"id": "count", "tool": f"{ECHO}.counter_increment", "arguments": {"key": case}}],
                     "answer": "counted: {{ steps.count.structured.count }}"}})
    await apply(cnc, subjects, "bindings", {
        "kind": "Binding", "id": f"count-{case}", "event_pattern": "message.received", "target_type": "agent",
        "target_id": f"count-{case}", "priority": 10, "filters": [
            {"field": "source.app", "op": "eq", "value": CHAT}, {"field": "session_id", "op": "eq", "value": session}]})

    owner, other = AsyncPageUser(chat_stack.page_url, asker), AsyncPageUser(chat_stack.page_url, intruder)
    try:
        assert (await owner.sign_in()).status_code == 200 and (await other.sign_in()).status_code == 200

        async def accepted() -> httpx.Response | None:
            reply = await owner.post({"type": "message.received", "session_id": session, "text": "count, please"})
            return None if reply.status_code == 503 else reply  # 503: the platform is still connecting

        said = await poll(accepted, timeout=30, what="the page accepting the message")
        assert said.status_code == 202, said.text

        async def asked() -> str | None:
            for message in sent(chat_stack.chat_log):
                found = re.fullmatch(r"apr\.([\w-]+)", str(message.get("interaction_id", "")))
                if message.get("session_id") == session and found:
                    return found.group(1)
            return None

        approval_id = await poll(asked, timeout=40, what="the approval question in the chat")
        stored = await admin_request(cnc, subjects, "approvals", "get", {"id": approval_id})
        assert stored["asked_in_chat"]["actor_id"] == asker, stored

        # an unsigned post naming the asker, with no session: refused, whoever it names
        base = chat_stack.page_url.rstrip("/")
        async with httpx.AsyncClient(timeout=10) as anyone:
            unproven = await anyone.post(f"{base}/events", json=answer(session, approval_id, "1", user_id=asker))
        assert unproven.status_code == 401, unproven.text
        # another page session: may not post as the asker, nor take the asker's id
        posing = await other.post(answer(session, approval_id, "1", user_id=asker))
        assert posing.status_code == 403 and posing.json()["error"]["code"] == "not_your_user", posing.text
        taking = await other.http.post("/session", json={"user_id": asker})
        assert taking.status_code == 409, taking.text
        # a page of another site that rebinds its name to the chat page: refused before anything
        port = urlsplit(base).port
        rebound = await owner.http.post("/events", json=answer(session, approval_id, "1"),
                                  headers={"host": f"attacker.example:{port}", "origin": f"http://attacker.example:{port}"})
        assert rebound.status_code == 403 and rebound.json()["error"]["code"] == "forbidden_host", rebound.text
        # the intruder's own answer reaches the gateway (stored, handled) and decides nothing
        own = await other.post(answer(session, approval_id, "1"))
        assert own.status_code == 202, own.text
        seq = await stored_event(cnc, subjects, CHAT, "interaction.submitted", lambda doc: (
            doc["payload"]["data"]["interaction_id"] == f"apr.{approval_id}"
            and doc["payload"]["actor"]["id"] == intruder))
        await handled(cnc, subjects, CHAT_APPROVALS, through=seq)
        still = await admin_request(cnc, subjects, "approvals", "get", {"id": approval_id})
        assert still["state"] == "pending", still
        assert counted(chat_stack, case) == 0

        # the asker's answer, from the asker's page, grants it: the write runs once
        granted = await owner.post(answer(session, approval_id, "1"))
        assert granted.status_code == 202, granted.text

        async def ran() -> bool:
            return counted(chat_stack, case) == 1

        await poll(ran, timeout=40, what="the granted write to run")
        decided = await admin_request(cnc, subjects, "approvals", "get", {"id": approval_id})
        assert decided["state"] in ("granted", "consumed"), decided  # consumed: the write used it
        assert decided["decided_by"] == f"user {asker} in the chat", decided
    finally:
        await owner.close()
        await other.close()


