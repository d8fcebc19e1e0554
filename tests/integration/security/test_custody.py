"""Custody: a runner's credential cannot choose the agent, the target or the approver of a call.

Each test performs the attack with the runner's own NATS user against the real gateway, router
and supervisor (each with its own user from deploy/nats-auth.conf) and the chat app, and fails
if the attack succeeds. Runs are real: an event published as the bridge publishes it is routed
by the router, which records the run before publishing it (no runner takes it here, so nothing
but the test's own calls acts for the run).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import pytest
from nats.js.errors import KeyNotFoundError, NotFoundError

from shared.clock import now_iso
from shared.contracts.envelope import Header, Source
from shared.contracts.run import run_id_for
from shared.contracts.subjects import Subjects
from shared.contracts.toolcall import METHOD_CALL, ToolCallEnvelope, ToolCallResult, decode_result
from shared.jetstream.run_records import run_record_key
from shared.jetstream.streams import audit_stream, run_records_bucket
from shared.nats.admin_service import admin_request
from tests.harness.runner_stack import chat_log_of
from tests.harness.runs import CHAT, ECHO, event, poll, sent, stack_apps
from tests.harness.secure_nats import Session
from tests.harness.secure_stack import SecureStack, secure_stack

SUBJECTS = Subjects("amp")
USER = "user-7"  # the actor of every test event (tests.harness.runs.event)
SERVICES = ("app_supervisor", "mcp_gateway", "router")  # no runner: the test is the runner


@dataclass
class Custody:
    stack: SecureStack
    chat_log: Path

    @property
    def counter_file(self) -> Path:
        return self.stack.counter_file

    @property
    def log_folder(self) -> Path:
        return self.stack.log_folder

    async def session(self, user: str) -> Session:
        return await self.stack.session(user)


@pytest.fixture(scope="module")
def custody(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Custody]:
    folder = tmp_path_factory.mktemp("custody")
    chat_log = chat_log_of(folder)
    with secure_stack(folder, apps=stack_apps(chat_log), services=SERVICES) as stack:
        yield Custody(stack, chat_log)


@pytest.fixture
async def users(custody: Custody) -> AsyncIterator[dict[str, Session]]:
    sessions = {user: await custody.session(user) for user in ("operator", "runner", "event-bridge")}
    yield sessions
    for session in sessions.values():
        await session.nc.close()


# -- the pieces of an attack ------------------------------------------------------------------
def playbook(agent_id: str, tools: list[str], **extra: Any) -> dict[str, Any]:
    return {"kind": "Agent", "id": agent_id, "agent_kind": "playbook", "events": ["*"], "tools": tools,
            "playbook": {"steps": []}, **extra}


async def dispatched_run(users: dict[str, Session], case: str, agent: dict[str, Any]) -> tuple[str, str]:
    """`agent` applied and bound, and one of its runs dispatched by the router for an event from
    the chat app in conversation `s-<case>`: (run id, conversation) once its record is stored."""
    operator = users["operator"].nc
    await admin_request(operator, SUBJECTS, "agents", "apply", {"document": agent})
    binding = {"kind": "Binding", "id": f"b-{case}", "event_pattern": "message.received",
               "filters": [{"field": "data.case", "op": "eq", "value": case}],
               "target_type": "agent", "target_id": agent["id"], "priority": 10}
    await admin_request(operator, SUBJECTS, "bindings", "apply", {"document": binding})
    session = f"s-{case}"
    doc = event("message.received", {"case": case, "text": "hello"}, session_id=session)
    await publish_as_bridge(users, doc)
    run_id = run_id_for(doc["header"]["message_id"], str(binding["id"]))
    records = await users["operator"].nc.jetstream().key_value(run_records_bucket(SUBJECTS).name)

    async def recorded() -> bool:
        try:
            return (await records.get(run_record_key(run_id))).value is not None
        except KeyNotFoundError:
            return False

    await poll(recorded, what=f"the router's record of run {run_id}")
    return run_id, session


async def publish_as_bridge(users: dict[str, Session], doc: dict[str, Any]) -> None:
    """An event stored exactly as the event-bridge stores it, under the bridge's own user."""
    subject = SUBJECTS.event(doc["header"]["source"]["app"], doc["payload"]["type"])
    await users["event-bridge"].nc.jetstream().publish(
        subject, json.dumps(doc).encode(), headers={"Nats-Msg-Id": doc["header"]["message_id"]})


async def runner_call(users: dict[str, Session], tool: str, arguments: dict[str, Any],
                      context: dict[str, Any]) -> tuple[str, ToolCallResult]:
    """A call on `amp.tool.call` as the runner's credential: (call id, result)."""
    call_id = str(uuid.uuid4())
    envelope = {"header": msgspec.to_builtins(Header(method=METHOD_CALL, message_id=call_id, timestamp=now_iso(),
                                                     source=Source(app="aurora.runner"))),
                "payload": {"tool": tool, "arguments": arguments, "context": context}}
    msgspec.convert(envelope, ToolCallEnvelope)  # what the gateway will decode: a well-formed call
    reply = await users["runner"].nc.request(SUBJECTS.tool_call, json.dumps(envelope).encode(), timeout=20)
    return call_id, decode_result(reply.data).payload


async def audited(users: dict[str, Session], call_id: str) -> dict[str, Any]:
    """The gateway's audit record of a call (read by sequence as the operator, consuming nothing)."""
    js = users["operator"].nc.jetstream()
    stream = audit_stream(SUBJECTS).name
    start = 1

    async def find() -> dict[str, Any] | None:
        nonlocal start
        try:
            info = await js.stream_info(stream)
        except NotFoundError:
            return None
        for seq in range(max(start, info.state.first_seq), info.state.last_seq + 1):
            try:
                record: dict[str, Any] = json.loads((await js.get_msg(stream, seq)).data or b"{}")
            except NotFoundError:
                continue
            start = seq + 1
            if record.get("call_id") == call_id:
                return record
        return None

    found: dict[str, Any] = await poll(find, what=f"the audit record of call {call_id}")
    return found


def forged_delivery(conversation: str) -> dict[str, Any]:
    return {"reply_target": {"app": CHAT, "session_id": conversation}, "capabilities": ["reply"],
            "source_app": CHAT}


def texts_in(custody: Custody, conversation: str) -> list[str]:
    return [str(m.get("text")) for m in sent(custody.chat_log) if m.get("session_id") == conversation]


async def sent_to(custody: Custody, conversation: str, needle: str) -> None:
    """Wait until the chat app sent a message holding `needle` to `conversation`."""
    async def probe() -> bool:
        return any(needle in text for text in texts_in(custody, conversation))

    await poll(probe, what=f"{needle!r} sent to {conversation}")


async def asked_in(custody: Custody, conversation: str, interaction_id: str) -> None:
    """Wait until the chat app sent the question `interaction_id` (beside its text) to `conversation`."""
    async def probe() -> bool:
        return any(m.get("session_id") == conversation and m.get("interaction_id") == interaction_id
                   for m in sent(custody.chat_log))

    await poll(probe, what=f"question {interaction_id} sent to {conversation}")


# -- 1. the old hole: an agent-less delivery tool aimed at any conversation -----------------------
async def test_an_agentless_event_reply_with_a_forged_target_is_denied_and_sends_nothing(
        custody: Custody, users: dict[str, Session]) -> None:
    victim = f"victim-{uuid.uuid4().hex[:6]}"
    call_id, result = await runner_call(users, "event_reply", {"text": "spam"},
                                        {"agent": None, "delivery": forged_delivery(victim)})
    assert result.status == "denied" and result.error is not None and result.error.code == "unknown_run", result
    record = await audited(users, call_id)  # the refusal was processed and is on the record ...
    assert record["status"] == "denied" and record["error_code"] == "unknown_run", record
    assert texts_in(custody, victim) == []  # ... and nothing reached the victim's conversation


# -- 2. a run nobody dispatched ------------------------------------------------------------------
async def test_a_call_for_a_run_never_dispatched_is_unknown_run_and_audited(
        custody: Custody, users: dict[str, Session]) -> None:
    case = f"nr-{uuid.uuid4().hex[:6]}"
    await admin_request(users["operator"].nc, SUBJECTS, "agents", "apply",
                        {"document": playbook(f"a-{case}", [f"{ECHO}.echo"])})
    made_up = f"run-{case}"
    call_id, result = await runner_call(users, f"{ECHO}.echo", {"value": case},
                                        {"agent": f"a-{case}", "run_id": made_up, "task_id": made_up})
    assert result.status == "denied" and result.error is not None and result.error.code == "unknown_run", result
    record = await audited(users, call_id)
    assert record["error_code"] == "unknown_run" and record["run_id"] == made_up, record


# -- 3. one runner credential, every agent's tools --------------------------------------------------
async def test_a_real_run_naming_another_agent_is_agent_mismatch(
        custody: Custody, users: dict[str, Session]) -> None:
    case = f"am-{uuid.uuid4().hex[:6]}"
    await admin_request(users["operator"].nc, SUBJECTS, "agents", "apply",
                        {"document": playbook(f"power-{case}", [f"{ECHO}.counter_increment", f"{ECHO}.echo"])})
    run_id, _ = await dispatched_run(users, case, playbook(f"a-{case}", [f"{ECHO}.echo"]))
    ids = {"run_id": run_id, "task_id": run_id}

    call_id, result = await runner_call(users, f"{ECHO}.counter_increment", {"key": case},
                                        {**ids, "agent": f"power-{case}"})
    assert result.status == "denied" and result.error is not None and result.error.code == "agent_mismatch", result
    assert (await audited(users, call_id))["error_code"] == "agent_mismatch"
    # Naming no agent does not help: the call acts as the run's own agent, which lacks the tool.
    _, agentless = await runner_call(users, f"{ECHO}.counter_increment", {"key": case}, ids)
    assert agentless.status == "denied" and agentless.error is not None and agentless.error.code == "not_bound"
    # Nor does another run's task.
    _, other_task = await runner_call(users, f"{ECHO}.echo", {"value": 1},
                                      {"agent": f"a-{case}", "run_id": run_id, "task_id": f"{run_id}-x"})
    assert other_task.error is not None and other_task.error.code == "task_mismatch", other_task
    assert case not in (custody.counter_file.read_text() if custody.counter_file.exists() else "")
    # The run's own agent, on its own run, still works.
    _, own = await runner_call(users, f"{ECHO}.echo", {"value": case}, {**ids, "agent": f"a-{case}"})
    assert own.status == "ok", own


# -- 4. a real run's reply aimed elsewhere ------------------------------------------------------
async def test_a_real_runs_reply_goes_to_the_recorded_conversation_not_the_forged_one(
        custody: Custody, users: dict[str, Session]) -> None:
    case = f"rt-{uuid.uuid4().hex[:6]}"
    run_id, conversation = await dispatched_run(users, case, playbook(f"a-{case}", [f"{ECHO}.echo"]))
    victim = f"victim-{case}"
    for agent in (f"a-{case}", None):
        text = f"hello from {agent or 'nobody'} {case}"
        _, result = await runner_call(users, "event_reply", {"text": text},
                                      {"agent": agent, "run_id": run_id, "task_id": run_id,
                                       "delivery": forged_delivery(victim),
                                       "actor": {"id": "accomplice", "kind": "user"}})
        assert result.status == "ok", result
        await sent_to(custody, conversation, text)
    assert texts_in(custody, victim) == []


# -- 5. the approver is the event's actor, not the caller's pick --------------------------------
async def test_a_chat_approval_goes_to_the_events_actor_and_a_forged_actor_cannot_grant(
        custody: Custody, users: dict[str, Session]) -> None:
    case = f"ap-{uuid.uuid4().hex[:6]}"
    agent = playbook(f"a-{case}", [f"{ECHO}.counter_increment"], chat_approval=True)
    run_id, conversation = await dispatched_run(users, case, agent)
    accomplice_room = f"accomplice-{case}"
    _, asked = await runner_call(users, f"{ECHO}.counter_increment", {"key": case},
                                 {"agent": f"a-{case}", "run_id": run_id, "task_id": run_id,
                                  "actor": {"id": "accomplice", "kind": "user"},
                                  "delivery": forged_delivery(accomplice_room)})
    assert asked.status == "needs_approval" and asked.approval_id, asked
    approval_id = asked.approval_id
    await asked_in(custody, conversation, f"apr.{approval_id}")
    assert texts_in(custody, accomplice_room) == []
    operator = users["operator"].nc
    stored = await admin_request(operator, SUBJECTS, "approvals", "get", {"id": approval_id})
    assert stored["asked_in_chat"]["actor_id"] == USER, stored["asked_in_chat"]
    assert stored["asked_in_chat"]["session_id"] == conversation

    def answer(value: str, user: str, where: str) -> dict[str, Any]:
        doc = event("interaction.submitted", {"interaction_id": f"apr.{approval_id}", "value": value},
                    session_id=where, subject_message=False)
        doc["payload"]["actor"] = {"id": user, "kind": "user"}
        return doc

    # The accomplice allows, in its own room and in the event's; then the event's actor refuses.
    # Answers are decided in order, so if a forged one had granted, the refusal could not deny.
    for doc in (answer("1", "accomplice", accomplice_room), answer("1", "accomplice", conversation),
                answer("2", USER, conversation)):
        await publish_as_bridge(users, doc)

    async def decided() -> dict[str, Any] | None:
        found: dict[str, Any] = await admin_request(operator, SUBJECTS, "approvals", "get", {"id": approval_id})
        return found if found["state"] != "pending" else None

    final = await poll(decided, what="the approval decided by an answer")
    assert final["state"] == "denied" and USER in final["decided_by"], final
    assert "accomplice" not in final["decided_by"]


# -- 6. the records themselves ----------------------------------------------------------------
async def test_only_the_router_may_write_run_records(custody: Custody, users: dict[str, Session]) -> None:
    bucket = run_records_bucket(SUBJECTS).name
    forged = json.dumps({"run_id": "forged", "target": {"type": "agent", "id": "power"}}).encode()
    for user in ("runner", "mcp-gateway", "consumer"):
        session = users.get(user) or await custody.session(user)
        try:  # neither a record nor a run (a record under `run.`: what the runners would run)
            for key in (f"forged-{user}", f"run.forged-{user}"):
                await session.nc.publish(f"$KV.{bucket}.{key}", forged)
                await session.refused(f"$KV.{bucket}.{key}")
        finally:
            if user not in users:
                await session.nc.close()
    records = await users["operator"].nc.jetstream().key_value(bucket)
    for user in ("runner", "mcp-gateway", "consumer"):
        for key in (f"forged-{user}", f"run.forged-{user}"):
            with pytest.raises(KeyNotFoundError):
                await records.get(key)
