"""An app that elicits during a call, answered by the event's user from the chat app's webhook:
the question goes to that conversation, the user's answer (checked against the requested schema)
is what the app gets; a refusal declines, no answer in time cancels; the app's progress notes
become steps of the task; an operator call has nobody to ask and is declined, saying so."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
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
    stored_events,
    task_id_of,
)
from tests.harness.tool_calls import operator_call
from tests.integration.elicit.helpers import (
    ELICIT,
    ELICIT_HTTP,
    ELICIT_TIMEOUT,
    GENERATIONS,
    PROTOCOL,
    ElicitStack,
    protocol_of,
)

USER = "user-7"  # the actor of the helpers' events


@pytest.fixture
def subjects() -> Subjects:
    return Subjects()


async def start_booking(nc: NATS, subjects: Subjects, app: str, case: str, *,
                        synthetic: bool = False) -> tuple[str, str]:
    """(task id, conversation): a playbook calls `book_table` of `app` for a chat message."""
    await apply(nc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["message.received"],
        "tools": [f"{app}.book_table"],
        "playbook": {"steps": [{"id": "book", "tool": f"{app}.book_table", "arguments": {"restaurant": "Mare"}}],
                     "answer": "booked: {{ steps.book.structured.action }}"}})
    await bind(nc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    session = f"s-{case}"
    doc = event("message.received", {"case": case, "text": "book a table"}, session_id=session, synthetic=synthetic)
    await publish_events(nc.jetstream(), subjects, [doc])
    return task_id_of(doc, f"b-{case}"), session


async def question(stack: ElicitStack, session: str) -> tuple[str, str]:
    """(interaction id, text) of the latest elicitation question in the conversation."""
    async def asked() -> list[dict[str, Any]]:
        return [m for m in sent(stack.chat_log)
                if m.get("session_id") == session and str(m.get("interaction_id", "")).startswith("eli.")]

    found = await poll(asked, what="the elicitation question in the chat", timeout=30)
    text = found[-1]["text"]
    assert found[-1]["interaction_id"] not in text  # beside the text, never in it
    return str(found[-1]["interaction_id"]), text


def webhook_answer(stack: ElicitStack, interaction_id: str, session: str, value: str, user: str = USER) -> None:
    """The user's answer, as the IM's signed webhook posts it to the chat app."""
    body = {"type": "interaction.submitted", "session_id": session, "interaction_id": interaction_id,
            "value": value, "user_id": user}
    reply = post_signed(stack.chat_web, body)
    assert reply.status_code == 202, reply.text


def step(task: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for s in task["steps"] if s["id"] == step_id)


async def audited(nc: NATS, app: str, interaction_id: str | None, **fields: Any) -> dict[str, Any]:
    """The audit record of an elicitation (by its interaction id, or by `fields`)."""
    def wanted(doc: dict[str, Any]) -> bool:
        ours = interaction_id is None or doc["call_id"] == interaction_id
        return doc.get("tool") == "elicitation/create" and ours and all(doc.get(k) == v for k, v in fields.items())

    async def found() -> list[dict[str, Any]]:
        return await stored_events(nc, f"amp.audit.{app.replace('.', '_')}", wanted)
    return (await poll(found, what=f"the audit record of elicitation {interaction_id or fields}"))[0]


@pytest.mark.parametrize("app", GENERATIONS)
async def test_the_user_answers_the_apps_form_in_the_chat(stack: ElicitStack, snc: NATS, subjects: Subjects,
                                                          app: str) -> None:
    assert await protocol_of(snc, app) == PROTOCOL[app]  # each way of asking back is the one meant
    case = f"eli-{uuid.uuid4().hex[:6]}"
    task_id, session = await start_booking(snc, subjects, app, case)
    interaction_id, text = await question(stack, session)
    assert "Booking a table at Mare" in text and "party_size" in text and "1) inside" in text, text

    webhook_answer(stack, interaction_id, session, "1: 4\n2: Ada", user="someone-else")  # not theirs to answer
    webhook_answer(stack, interaction_id, session, "1: 40\n2: Ada\n3: 2")  # 40 is too many: told what to fix
    async def told() -> list[dict[str, Any]]:
        return [m for m in sent(stack.chat_log) if m.get("session_id") == session and "不符合要求" in m["text"]]
    [fix] = await poll(told, what="the chat told what to fix")
    assert "至多为 12" in fix["text"], fix  # in the agent's language (the default)
    webhook_answer(stack, interaction_id, session, "party_size: 4 | name: Ada | seating: 2")  # the page's answer box

    done = await settled(snc, subjects, task_id, timeout=40, states=TERMINAL)
    assert done["state"] == "succeeded" and done["answer"] == "booked: accept", json.dumps(done)[:3000]
    booked = step(done, "book")["structured"]
    assert booked == {"action": "accept", "restaurant": "Mare", "party_size": 4, "name": "Ada",
                      "seating": "outside"}, booked
    progress = [s for s in done["steps"] if s["kind"] == "progress"]
    assert [s["text"] for s in progress] == ["1/3 looking up Mare", "3/3 answer: accept"], progress
    record = await audited(snc, app, interaction_id)
    assert record["tool"] == "elicitation/create" and record["status"] == "ok" and record["task_id"] == task_id
    assert record["actor"] == USER and "accept" in record["output_summary"], record


async def test_a_refusal_declines(stack: ElicitStack, snc: NATS, subjects: Subjects) -> None:
    case = f"elino-{uuid.uuid4().hex[:6]}"
    task_id, session = await start_booking(snc, subjects, ELICIT, case)
    interaction_id, _ = await question(stack, session)
    webhook_answer(stack, interaction_id, session, "decline")
    done = await settled(snc, subjects, task_id, timeout=40, states=TERMINAL)
    assert done["answer"] == "booked: decline", json.dumps(done)[:3000]


async def test_no_answer_in_time_cancels(stack: ElicitStack, snc: NATS, subjects: Subjects) -> None:
    case = f"elito-{uuid.uuid4().hex[:6]}"
    task_id, session = await start_booking(snc, subjects, ELICIT, case)
    interaction_id, _ = await question(stack, session)
    done = await settled(snc, subjects, task_id, timeout=ELICIT_TIMEOUT + 30, states=TERMINAL)
    assert done["answer"] == "booked: cancel", json.dumps(done)[:3000]
    record = await audited(snc, ELICIT, interaction_id)
    assert f"no answer within {ELICIT_TIMEOUT:g}s" in record["output_summary"], record


@pytest.mark.parametrize("app", [ELICIT, ELICIT_HTTP])
async def test_an_operator_call_has_no_user_to_ask(stack: ElicitStack, snc: NATS, subjects: Subjects, app: str) -> None:
    answer = await operator_call(snc, subjects, f"{app}.book_table", {"restaurant": "Mare"})
    assert answer == {"action": "decline", "restaurant": "Mare"}, answer
    record = await audited(snc, app, None, caller="operator")
    assert record["status"] == "denied" and record["error_code"] == "no_user_to_ask", record
    assert record["error_message"] == ("no user to ask: the call is no event's run (an operator's, "
                                       "or an MCP client's at an agent's endpoint)"), record


async def test_a_synthetic_run_asks_nobody(stack: ElicitStack, snc: NATS, subjects: Subjects) -> None:
    case = f"elisyn-{uuid.uuid4().hex[:6]}"
    task_id, session = await start_booking(snc, subjects, ELICIT, case, synthetic=True)
    done = await settled(snc, subjects, task_id, timeout=40, states=TERMINAL)
    assert step(done, "book")["structured"] == {"action": "decline", "restaurant": "Mare"}, json.dumps(done)[:3000]
    record = await audited(snc, ELICIT, None, task_id=task_id)
    assert record["error_code"] == "synthetic" and record["synthetic"] is True, record
    assert not [m for m in sent(stack.chat_log)
                if m.get("session_id") == session and str(m.get("interaction_id", "")).startswith("eli.")]
