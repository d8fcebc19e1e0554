"""Secrets never leak, and approval decisions cannot be suppressed by an app.

One real stack (nats-server, bridge, supervisor, gateway, router, one runner, the scripted model)
with planted secrets: an HTTP system's bearer credential, a remote app's `mcp.headers` token, an
agent's model API key, the runner's seal key, and the `password` and `pin` arguments of a write
an llm agent proposes. The flows run — calls, approval requested (asked in the chat too),
granted, resumed, audited — then every message of every stream (events, signals, runs, audit,
dead letters, every KV bucket's and object store's stream), every log file and the chat app's
sent messages are read: none holds any planted value. The resumed write still got the full
password (its digest matches), so redacting the record did not weaken or break the approval.

The second test is the attack on decision ids: the chat app publishes, through its own signal
path, a native event under the id the gateway used to give `approval.granted`; the real grant
still reaches AMP_EVENTS and resumes the task.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
import nats
import nats.js.errors
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from aurora_cli.commands.events import build_native_event
from shared.clock import now_iso
from shared.contracts.envelope import Header, Source
from shared.contracts.signals import NativeEventSignal
from shared.contracts.subjects import Subjects, app_token
from shared.contracts.toolcall import ToolCallEnvelope, ToolCallRequest, decode_result
from shared.nats import write_through
from shared.nats.admin_service import admin_request
from shared.nats.signal_publisher import new_signal_id, publish_signal
from tests.fakes.openai_server import Conversation, FakeOpenAI, Turn
from tests.harness.chat_approvals import asked_in_chat
from tests.harness.cli import aurora_command as cli
from tests.harness.clients import nats_client
from tests.harness.notes_app import serving_notes
from tests.harness.processes import ServiceProcess
from tests.harness.runs import (
    CHAT,
    CHAT_PLATFORM,
    ECHO,
    RUNNER_ENV,
    apply,
    bind,
    event,
    poll,
    publish_events,
    settled,
    stack_apps,
    stored_events,
    task_id_of,
)
from tests.harness.stack import StackBuilder
from tests.integration.mcp_gateway.systems.recording_server import Recorded, RecordingServer, Reply

pytestmark = pytest.mark.timeout(240)
FINAL = ("succeeded", "failed", "unverified", "partial", "cancelled")
SYSTEM_TOKEN = f"sys-{uuid.uuid4().hex}"
HEADER_TOKEN = f"hdr-{uuid.uuid4().hex}"
MODEL_KEY = f"sk-{uuid.uuid4().hex}"
SEAL_KEY = f"seal-{uuid.uuid4().hex}"
PASSWORD = f"pw-{uuid.uuid4().hex}"
PIN = f"pin-{uuid.uuid4().hex}"
PLANTED = {"system credential": SYSTEM_TOKEN, "mcp.headers token": HEADER_TOKEN, "model API key": MODEL_KEY,
           "seal key": SEAL_KEY, "password argument": PASSWORD, "pin argument": PIN}
SPEC = {
    "openapi": "3.0.3", "info": {"title": "Vault (test)", "version": "1"},
    "paths": {
        "/whoami": {"get": {"operationId": "whoami", "responses": {"200": {"description": "who"}}}},
        "/broken": {"get": {"operationId": "broken", "responses": {"200": {"description": "never"}}}},
    },
}


def vault(request: Recorded) -> Reply:
    """Echoes the credential it got, in a result and in an error: both must come back redacted."""
    seen = request.header("Authorization") or ""
    if request.path == "/broken":
        return Reply(400, f"bad request for https://vault.test/?access={seen.split()[-1]}".encode())
    return Reply.json({"code": 0, "seen": seen})


@dataclass
class Stack:
    folder: Path
    url: str
    chat_log: Path
    fake: FakeOpenAI
    vault_url: str
    processes: dict[str, ServiceProcess]

    @property
    def log_folder(self) -> Path:
        return self.folder


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("secrets")
    fake = FakeOpenAI().start()
    recording = RecordingServer(vault).start()
    try:
        with serving_notes(folder, {**os.environ, "AURORA_NOTES_TOKEN": HEADER_TOKEN}) as notes_url:
            chat_log = folder / "chat-sent.jsonl"
            apps = {k: v for k, v in stack_apps(chat_log).items() if k in ("chat", "echo")}
            apps["chat"]["platform"] = CHAT_PLATFORM
            apps["notes"] = {"package": "guarded.notes", "mcp": {
                "transport": "streamable_http", "url": notes_url, "health_timeout_seconds": 10,
                "headers": {"Authorization": "Bearer ${AURORA_TEST_NOTES_TOKEN}"}}}
            builder = (StackBuilder(folder).apps(apps).bridge().supervisor()
                       .gateway(AURORA_TEST_NOTES_TOKEN=HEADER_TOKEN, AURORA_TEST_VAULT_TOKEN=SYSTEM_TOKEN,
                                AURORA_GATEWAY_SECRET_ENV="AURORA_TEST_VAULT_TOKEN")  # declared to systems
                       .router()
                       .runners(1, **RUNNER_ENV, AURORA_TEST_MODEL_KEY=MODEL_KEY, AURORA_RUNNER_SEAL_KEY=SEAL_KEY))
            with builder.running() as running:
                yield Stack(folder, running.url, chat_log, fake, recording.url, running.processes)
    finally:
        recording.stop()
        fake.stop()


@pytest.fixture
async def nc(stack: Stack) -> AsyncIterator[NATS]:
    async with nats_client(stack.url) as client:
        yield client


async def raw_operator_call(nc: NATS, subjects: Subjects, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    request = ToolCallEnvelope(
        header=Header(method="tools/call", message_id=str(uuid.uuid4()), timestamp=now_iso(),
                      source=Source(app="tests")),
        payload=ToolCallRequest(tool=tool, arguments=arguments))
    reply = decode_result((await nc.request(subjects.operator_tool_call, msgspec.json.encode(request),
                                            timeout=20)).data)
    result: dict[str, Any] = msgspec.to_builtins(reply.payload)
    return result


async def http_system_calls(nc: NATS, subjects: Subjects, stack: Stack) -> None:
    """The system's credential goes out on every call and comes back in none of the answers."""
    spec = stack.folder / "vault.json"
    spec.write_text(json.dumps(SPEC))
    await apply(nc, subjects, "systems", {
        "kind": "System", "name": "vault", "type": "http", "base_url": stack.vault_url,
        "contract": {"success_field": "code", "success_values": [0]},
        "auth": {"header": "Authorization", "scheme": "Bearer", "value_env": "AURORA_TEST_VAULT_TOKEN"}})
    await admin_request(nc, subjects, "systems", "import_openapi",  # the text is sent, as the CLI does
                        {"name": "vault", "base_url": stack.vault_url, "spec": str(spec),
                         "document": spec.read_text()}, timeout=20)
    whoami = await raw_operator_call(nc, subjects, "vault.whoami", {})
    assert whoami["status"] == "ok" and whoami["structured"]["seen"] == "Bearer [redacted]", whoami
    broken = await raw_operator_call(nc, subjects, "vault.broken", {})
    assert broken["status"] == "tool_error" and "[redacted]" in broken["error"]["message"], broken


async def header_app_call(nc: NATS, subjects: Subjects) -> None:
    """The remote app opens only with its header token: a listing that works proves it was sent."""
    async def listed() -> dict[str, Any] | None:
        result = await raw_operator_call(nc, subjects, "guarded.notes.list_notes", {})
        return result if result["status"] == "ok" else None

    await poll(listed, timeout=40, what="the guarded notes app answering")
    # A tool that echoes a configured credential: the caller (and the audit) get it redacted.
    echoed = await raw_operator_call(nc, subjects, f"{ECHO}.echo", {"value": f"header was {HEADER_TOKEN}"})
    assert echoed["status"] == "ok" and echoed["structured"] == {"value": "header was [redacted]"}, echoed


async def approved_secret_write(nc: NATS, subjects: Subjects, stack: Stack) -> dict[str, Any]:
    """An llm agent proposes `set_password`; it waits for approval (asked in the chat too), is
    granted, resumes and runs with the full arguments. The finished task."""
    case = f"pw-{uuid.uuid4().hex[:6]}"

    def script(chat: Conversation) -> Turn:
        if chat.turn == 1:
            return chat.call("set_password", user="ann", password=PASSWORD, pin=PIN)
        return chat.answer("password changed")

    stack.fake.script(case, script, api_key=MODEL_KEY)
    asked = await asked_in_chat(stack, nc, subjects, case, text="change ann's password", timeout=60, agent={
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "llm", "events": ["message.received"],
        "tools": [f"{ECHO}.set_password"], "chat_approval": True,
        "model": {"base_url": stack.fake.base_url, "model": case, "api_key_env": "AURORA_TEST_MODEL_KEY"}})
    task_id, approval_id, question = asked.task_id, asked.approval_id, asked.question
    assert "[redacted]" in question["text"] and "ann" in question["text"], question
    shown = await admin_request(nc, subjects, "approvals", "get", {"id": approval_id})
    assert shown["arguments"] == {"user": "ann", "password": "[redacted]", "pin": "[redacted]"}, shown
    assert "decision_salt" not in shown
    printed = cli(stack.url, "approvals", "show", approval_id)  # what an operator reads
    assert printed.returncode == 0 and "set_password" in printed.stdout and "[redacted]" in printed.stdout, printed
    assert PASSWORD not in printed.stdout and PIN not in printed.stdout
    await admin_request(nc, subjects, "approvals", "grant", {"id": approval_id, "by": "secrets-test"})
    done = await settled(nc, subjects, task_id, timeout=60, states=FINAL)
    assert done["state"] == "succeeded", json.dumps(done)[:4000]
    [write] = [s for s in done["steps"] if s["name"] == f"{ECHO}.set_password" and s["classification"] == "ok"]
    assert write["structured"]["digest"] == hashlib.sha256(f"{PASSWORD}|{PIN}".encode()).hexdigest()[:16]
    assert write["arguments"] == {"user": "ann", "password": "[redacted]", "pin": "[redacted]"}
    return done


async def every_stored_message(nc: NATS) -> list[tuple[str, int, bytes]]:
    """(stream, sequence, headers + data) of every message in every stream, KV and object stores included."""
    js = nc.jetstream()
    found: list[tuple[str, int, bytes]] = []
    for info in await js.streams_info():
        name, state = info.config.name, info.state
        if not state.messages:
            continue
        for seq in range(state.first_seq, state.last_seq + 1):
            try:
                msg = await js.get_msg(name, seq)
            except nats.js.errors.NotFoundError:
                continue
            headers = json.dumps(msg.headers or {}).encode()
            found.append((name, seq, headers + b"\n" + (msg.data or b"")))
    return found


def leaks(blob: bytes) -> list[str]:
    return [what for what, value in PLANTED.items() if value.encode() in blob]


async def test_an_app_cannot_suppress_a_grant_by_taking_its_event_id_first(stack: Stack, nc: NATS) -> None:
    subjects = Subjects()
    case = f"forge-{uuid.uuid4().hex[:6]}"
    await apply(nc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["message.received"],
        "tools": [f"{ECHO}.counter_increment"],
        "playbook": {"steps": [{"id": "count", "tool": f"{ECHO}.counter_increment", "arguments": {"key": case}}],
                     "answer": "counted: {{ steps.count.structured.count }}"}})
    await bind(nc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "count"}, session_id=f"s-{case}")
    await publish_events(nc.jetstream(), subjects, [doc])
    task_id = task_id_of(doc, f"b-{case}")
    waiting = await settled(nc, subjects, task_id, timeout=60)
    assert waiting["state"] == "awaiting_approval", json.dumps(waiting)[:3000]
    approval_id = waiting["approval_id"]

    # The chat app takes, on its own signal path (as `aurora events emit` or a stdio app's native
    # event would), every id it can derive from what it saw: the approval id is in the events.
    forged = [f"approval-{approval_id}-granted", f"approval-{approval_id}-denied"]
    for message_id in forged:
        native = build_native_event("message.received", app_id=CHAT, data={"text": "mine"}, message_id=message_id)
        await publish_signal(nc.jetstream(), subjects, NativeEventSignal(
            signal_id=new_signal_id(), app=CHAT, instance="default", observed_at=now_iso(), event=native))

    async def taken() -> list[dict[str, Any]] | None:  # both, or not yet (each signal is bridged on its own)
        stored = [e for e in await stored_events(nc, f"{subjects.prefix}.evt.{app_token(CHAT)}.message.received",
                                                lambda e: e["header"]["message_id"] in forged)]
        return stored if len(stored) == len(forged) else None

    assert {e["header"]["message_id"] for e in await poll(taken, what="the forged events stored first")} == set(forged)
    await admin_request(nc, subjects, "approvals", "grant", {"id": approval_id, "by": "forge-test"})
    done = await settled(nc, subjects, task_id, timeout=60, states=FINAL)
    assert done["state"] == "succeeded" and done["answer"] == "counted: 1", json.dumps(done)[:3000]
    grants = await stored_events(nc, f"{subjects.prefix}.evt.*.approval.granted",
                                 lambda e: (e["payload"].get("subject") or {}).get("id") == approval_id)
    assert len(grants) == 1 and grants[0]["header"]["message_id"] not in forged, grants


async def test_no_planted_secret_is_stored_published_or_logged(stack: Stack, nc: NATS) -> None:
    subjects = Subjects()
    # Signals leave their work queue once the bridge has them, so they are read as they pass
    # (with events and audit records, also kept in their streams). Tool call requests are not
    # read: they must carry the full arguments to the gateway, and nothing keeps them.
    passing: list[tuple[str, bytes]] = []

    async def seen(msg: Msg) -> None:
        passing.append((msg.subject, json.dumps(msg.headers or {}).encode() + b"\n" + msg.data))

    for wanted in (f"{subjects.prefix}.sig.>", f"{subjects.prefix}.evt.>", f"{subjects.prefix}.audit.>"):
        await nc.subscribe(wanted, cb=seen)
    await write_through.flush(nc)
    await http_system_calls(nc, subjects, stack)
    await header_app_call(nc, subjects)
    await approved_secret_write(nc, subjects, stack)

    async def audited() -> list[tuple[str, int, bytes]]:
        messages = await every_stored_message(nc)
        streams = {name for name, _, blob in messages if b"set_password" in blob and b'"status":"ok"' in blob}
        return messages if "AMP_AUDIT" in streams else []

    messages = await poll(audited, timeout=30, what="the resumed write's audit record")
    streams = {name for name, _, _ in messages}
    assert streams >= {"AMP_EVENTS", "AMP_AUDIT", "KV_AMP_APPROVALS", "KV_AMP_TASKS", "KV_AMP_SYSTEMS",
                       "KV_AMP_AGENTS"}, sorted(streams)
    found = [(name, seq, what) for name, seq, blob in messages for what in leaks(blob)]
    assert not found, f"planted secrets stored in streams: {found[:20]}"
    kinds = {subject.split(".")[1] for subject, _ in passing}
    assert kinds == {"sig", "evt", "audit"} and any(b"approval.granted" in blob for _, blob in passing)
    published = [(subject, what) for subject, blob in passing for what in leaks(blob)]
    assert not published, f"planted secrets published: {published[:20]}"
    for process in stack.processes.values():
        process.terminate(timeout=20)  # every log is complete, shutdown included
    files = [p for p in stack.folder.rglob("*") if p.is_file() and "jetstream" not in p.parts
             and p.name not in ("vault.json",)]
    assert any(p.name.startswith("gateway") for p in files) and stack.chat_log in files
    logged = [(str(p.relative_to(stack.folder)), what) for p in files for what in leaks(p.read_bytes())]
    assert not logged, f"planted secrets in files: {logged}"
