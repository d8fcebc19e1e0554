"""An approval decided in the chat: the agent's operator allowed it (`chat_approval`), so the
gateway asks the user who caused the event, in that conversation, to confirm the write; an answer
from anyone else changes nothing, the user's own answer grants it and the task resumes (the
write runs once), and a refusal cancels the task saying who refused."""

from __future__ import annotations

import json
import uuid
from typing import Any

from nats.aio.client import Client as NATS

from services.mcp_gateway.approvals.in_chat import DURABLE as CHAT_APPROVALS
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.chat_approvals import USER, answer_in_chat, asked_in_chat
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import (
    CHAT,
    ECHO,
    handled,
    poll,
    settled,
    stored_event,
)
from tests.harness.tool_calls import echo_counter

FINAL = ("succeeded", "failed", "unverified", "partial", "cancelled")


async def test_the_user_who_asked_confirms_in_the_chat_and_the_write_runs_once(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"chat-{uuid.uuid4().hex[:6]}"
    asked = await asked_in_chat(stack, snc, subjects, case)
    task_id, approval_id, session = asked.task_id, asked.approval_id, asked.session
    # in the agent's language (the default), the id beside the text and never in it
    assert f"{ECHO}.counter_increment" in asked.question["text"] and "1. 允许" in asked.question["text"]
    assert approval_id not in asked.question["text"]
    stored = await admin_request(snc, subjects, "approvals", "get", {"id": approval_id})
    assert stored["asked_in_chat"]["actor_id"] == USER and stored["asked_in_chat"]["session_id"] == session

    await answer_in_chat(snc, subjects, asked, "1", user="someone-else")  # not theirs to allow
    # the gateway has taken that answer (stored, delivered, acknowledged) and decided nothing
    seq = await stored_event(snc, subjects, CHAT, "interaction.submitted", lambda doc: (
        doc["payload"]["data"]["interaction_id"] == f"apr.{approval_id}"
        and doc["payload"]["actor"]["id"] == "someone-else"))
    await handled(snc, subjects, CHAT_APPROVALS, through=seq)
    assert (await admin_request(snc, subjects, "approvals", "get", {"id": approval_id}))["state"] == "pending"
    assert (await settled(snc, subjects, task_id))["state"] == "awaiting_approval"
    assert await echo_counter(snc, subjects, case) == 0

    await answer_in_chat(snc, subjects, asked, "1")
    done = await settled(snc, subjects, task_id, timeout=40, states=FINAL)
    assert done["state"] == "succeeded" and done["answer"] == "counted: 1", json.dumps(done)[:3000]
    assert await echo_counter(snc, subjects, case) == 1
    decided = await admin_request(snc, subjects, "approvals", "get", {"id": approval_id})
    assert decided["decided_by"] == f"user {USER} in the chat", decided
    assert any(f"granted by user {USER} in the chat" in (t["reason"] or "") for t in done["transitions"])
    # on the audit as the chat user the bridge's event named
    audit = snc.jetstream(timeout=5)

    async def audited() -> dict[str, Any] | None:
        info = await audit.stream_info(subjects.stream("AUDIT"))
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            record = json.loads((await audit.get_msg(subjects.stream("AUDIT"), seq)).data or b"{}")
            if record.get("approval_id") == approval_id and record.get("status") == "approval_granted":
                return dict(record)
        return None

    record = await poll(audited, timeout=10, what="the chat decision's audit record")
    assert record["caller"] == f"chat:{CHAT}:{USER}", record


async def test_a_refusal_in_the_chat_cancels_the_task(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"chatno-{uuid.uuid4().hex[:6]}"
    asked = await asked_in_chat(stack, snc, subjects, case)
    await answer_in_chat(snc, subjects, asked, "2")
    done = await settled(snc, subjects, asked.task_id, timeout=40, states=FINAL)
    assert done["state"] == "cancelled" and done["error"]["code"] == "approval_denied", json.dumps(done)[:2000]
    assert await echo_counter(snc, subjects, case) == 0
