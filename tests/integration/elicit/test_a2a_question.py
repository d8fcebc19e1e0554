"""A remote A2A agent's question during a pool call, asked of the calling task's user in the chat:
a playbook calls an imported skill of an agent built with the official a2a-sdk server classes
(tests/apps/a2a_agent.py); the agent stops in input-required, the question reaches the chat as an
elicitation, the user's answer from the IM's webhook goes back as the next message of the same
remote task, and the task ends with the agent's answer."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.a2a_agents import a2a_agents, agent_log
from tests.harness.chat_webhook import post_signed
from tests.harness.runs import (
    TERMINAL,
    apply,
    bind,
    event,
    poll,
    publish_events,
    sent,
    settled,
    task_id_of,
)
from tests.integration.elicit.helpers import ElicitStack


@pytest.fixture(scope="module")
def remote_agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Any]]:
    folder = tmp_path_factory.mktemp("a2a-question")
    with a2a_agents(folder, ("--streaming",)) as [url]:
        yield url, folder


async def test_the_user_answers_the_remote_agents_question_in_the_chat(
        stack: ElicitStack, snc: NATS, remote_agent: tuple[str, Any]) -> None:
    subjects, (url, folder) = Subjects(), remote_agent
    case = f"a2aq-{uuid.uuid4().hex[:6]}"
    system, tool = f"visits-{case}", f"visits-{case}.book"
    await admin_request(snc, subjects, "systems", "import_a2a", {"name": system, "card": url}, timeout=20)
    for verb, extra in (("mark", {"side_effect": "read"}), ("review", {}), ("publish", {})):  # a reviewer's read
        await admin_request(snc, subjects, "tools", verb, {"name": tool, **extra}, timeout=10)
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["message.received"],
        "tools": [tool],
        "playbook": {"steps": [{"id": "book", "tool": tool, "arguments": {"message": "pump service"}}],
                     "answer": "{{ steps.book.structured.text }}"}})
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    session = f"s-{case}"
    doc = event("message.received", {"case": case, "text": "book the pump service"}, session_id=session)
    await publish_events(snc.jetstream(), subjects, [doc])

    async def asked() -> list[dict[str, Any]]:
        return [m for m in sent(stack.chat_log)
                if m.get("session_id") == session and str(m.get("interaction_id", "")).startswith("eli.")]

    [question] = await poll(asked, what="the remote agent's question in the chat", timeout=30)
    assert "Which date?" in question["text"], question
    reply = post_signed(stack.chat_web, {"type": "interaction.submitted", "session_id": session,
                                         "interaction_id": question["interaction_id"], "value": "May 4",
                                         "user_id": "user-7"})
    assert reply.status_code == 202, reply.text
    done = await settled(snc, subjects, task_id_of(doc, f"b-{case}"), timeout=40, states=TERMINAL)
    assert done["state"] == "succeeded" and done["answer"] == "booked pump service on May 4", json.dumps(done)[:3000]
    answers = [e for e in agent_log(folder) if e.get("skill") == "book" and e.get("text") == "May 4"]
    assert len(answers) == 1 and answers[0]["message_id"].endswith("-answer-1"), answers
