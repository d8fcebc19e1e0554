"""A write that waits for its approval in the chat, and answers typed there: the setup the runner
stack's chat-approval tests share (tests/integration/runner/: the decision itself, and what the
conversation is told when the task ends).

`asked_in_chat` applies an agent with `chat_approval` on (by default a playbook whose one step is
the echo app's counter write), binds it to the chat's `message.received` of its case, and sends
the event; it returns once the task waits for the approval and the chat has been sent the
question. The e2e secret-leak test passes an llm agent of its own."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.runs import (
    CHAT,
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
from tests.harness.tool_calls import operator_call

USER = "user-7"  # the actor of the events `helpers.event` makes: the user who may answer


class ChatStack(Protocol):
    chat_log: Path  # what the chat app was sent


@dataclass(frozen=True)
class AskedInChat:
    task_id: str
    approval_id: str
    session: str
    question: dict[str, Any]  # the question as the chat app was sent it


def counter_write_agent(case: str, *, locale: str | None = None) -> dict[str, Any]:
    """A playbook agent (`a-<case>`, in `locale` or the default) whose one step is the echo app's
    counter write for key `case`, asked in the chat."""
    agent: dict[str, Any] = {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["message.received"],
        "tools": [f"{ECHO}.counter_increment"], "chat_approval": True,
        "playbook": {"steps": [{"id": "count", "tool": f"{ECHO}.counter_increment", "arguments": {"key": case}}],
                     "answer": "counted: {{ steps.count.structured.count }}"}}
    if locale is not None:
        agent["locale"] = locale
    return agent


async def asked_in_chat(stack: ChatStack, nc: NATS, subjects: Subjects, case: str, *,
                        agent: dict[str, Any] | None = None, text: str = "count, please",
                        timeout: float = 40.0) -> AskedInChat:
    """`agent` (`counter_write_agent(case)` unless given) asked `text` in session `s-<case>`: its
    write waits for the user's approval, and the question is in the chat."""
    agent = agent or counter_write_agent(case)
    await apply(nc, subjects, "agents", agent)
    await bind(nc, subjects, f"b-{case}", "message.received", "agent", agent["id"], case=case)
    session = f"s-{case}"
    doc = event("message.received", {"case": case, "text": text}, session_id=session)
    await publish_events(nc.jetstream(), subjects, [doc])
    task_id = task_id_of(doc, f"b-{case}")
    waiting = await settled(nc, subjects, task_id, timeout=timeout)
    assert waiting["state"] == "awaiting_approval", json.dumps(waiting)[:3000]
    approval_id = waiting["approval_id"]

    async def question() -> list[dict[str, Any]]:
        return [m for m in sent(stack.chat_log)
                if m.get("session_id") == session and m.get("interaction_id") == f"apr.{approval_id}"]

    [asked] = await poll(question, what="the approval question in the chat")
    return AskedInChat(task_id, approval_id, session, asked)


async def answer_in_chat(nc: NATS, subjects: Subjects, asked: AskedInChat, value: str, *, user: str = USER) -> None:
    """`value` typed in the question's conversation by `user` (the chat app's simulated answer)."""
    await operator_call(nc, subjects, f"{CHAT}.simulate_interaction_answer",
                        {"interaction_id": f"apr.{asked.approval_id}", "value": value, "session_id": asked.session,
                         "user_id": user})
