"""A write that waits for its approval in the chat, and answers typed there: the setup the runner
stack's chat-approval tests share (tests/integration/runner/: the decision itself, and what the
conversation is told when the task ends).

`asked_in_chat` applies a playbook agent whose one step is the echo app's counter write, with
`chat_approval` on, binds it to the chat's `message.received` of its case, and sends the event;
it returns once the task waits for the approval and the chat has been sent the question."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.tool_calls import operator_call
from tests.integration.runner.helpers import (
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

USER = "user-7"  # the actor of the events `helpers.event` makes: the user who may answer


class ChatStack(Protocol):
    chat_log: Path  # what the chat app was sent


@dataclass(frozen=True)
class AskedInChat:
    task_id: str
    approval_id: str
    session: str
    question: dict[str, Any]  # the question as the chat app was sent it


async def asked_in_chat(stack: ChatStack, nc: NATS, subjects: Subjects, case: str, *,
                        locale: str | None = None) -> AskedInChat:
    """A playbook's write (the agent in `locale`, else the default) waits for the user's approval,
    and the question is in the chat."""
    agent: dict[str, Any] = {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["message.received"],
        "tools": [f"{ECHO}.counter_increment"], "chat_approval": True,
        "playbook": {"steps": [{"id": "count", "tool": f"{ECHO}.counter_increment", "arguments": {"key": case}}],
                     "answer": "counted: {{ steps.count.structured.count }}"}}
    if locale is not None:
        agent["locale"] = locale
    await apply(nc, subjects, "agents", agent)
    await bind(nc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    session = f"s-{case}"
    doc = event("message.received", {"case": case, "text": "count, please"}, session_id=session)
    await publish_events(nc.jetstream(), subjects, [doc])
    task_id = task_id_of(doc, f"b-{case}")
    waiting = await settled(nc, subjects, task_id, timeout=40)
    assert waiting["state"] == "awaiting_approval", json.dumps(waiting)[:2000]
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
