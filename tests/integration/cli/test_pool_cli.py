"""The tool-pool commands as real processes against a real stack: `aurora tools show|publish|
deprecate`, `aurora agents tools`, `aurora systems`, `aurora approvals`, `aurora audit tail`.

One stack for the module (its own nats-server, event-bridge, supervisor, gateway and router) with
the chat app, the echo app and an app under `governance: review`. Each test binds its own agent
and puts back what it changes, so the tests do not depend on their order.
"""

from __future__ import annotations

import getpass
import json
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import pytest
import yaml

from shared.contracts.subjects import Subjects
from tests.harness.cli import Cli, cli_here_runner
from tests.harness.processes import REPO, ServiceProcess
from tests.harness.run_records import dispatched, run_context
from tests.harness.stack import StackBuilder

PYTHON = sys.executable
ECHO_APP = REPO / "tests" / "apps" / "echo_app.py"
REVIEW_APP = Path(__file__).parent / "apps" / "review_app.py"
PETSTORE = REPO / "tests" / "fixtures" / "openapi" / "petstore-3.0.json"
SUBJECTS = Subjects("amp")
CHAT_PLATFORM = {"reply": "send_message", "react": "react", "respond_friend_request": "respond_friend_request",
                 "get_actor": "get_user_info", "send_message": "send_message"}


@dataclass
class Stack:
    url: str
    cli: Cli
    folder: Path
    chat_log: Path
    gateway: ServiceProcess

    def ok(self, *args: str) -> str:
        result = self.cli(*args, COLUMNS="200")
        assert result.returncode == 0, f"aurora {' '.join(args)} → {result.returncode}\n{result.stderr}"
        return result.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "--json"))

    def apply_agent(self, agent_id: str, tools: list[str]) -> None:
        path = self.folder / f"agent-{agent_id}.yml"
        path.write_text(yaml.safe_dump({"kind": "Agent", "id": agent_id, "agent_kind": "playbook",
                                        "events": ["message.*"], "tools": tools}), encoding="utf-8")
        assert f"agent/{agent_id} created" in self.ok("apply", "-f", str(path))
        # The gateway reads agents from its KV mirror: wait until it knows this one.
        deadline = time.monotonic() + 10
        while self.cli("agents", "tools", agent_id, "--json").returncode != 0:
            assert time.monotonic() < deadline, f"the gateway never saw agent {agent_id}"
            time.sleep(0.1)


def _apps(chat_log: Path) -> dict[str, Any]:
    return {
        "chat": {"package": "im.polaris.qq", "platform": CHAT_PLATFORM,
                 "mcp": {"command": [PYTHON, "-m", "apps.aurora_app_chat"], "cwd": str(REPO),
                         "env": {"CHAT_LOG_FILE": str(chat_log)}}},
        "echo": {"package": "test.echo", "mcp": {"command": [PYTHON, str(ECHO_APP)]}},
        "review": {"package": "test.review", "governance": "review", "mcp": {"command": [PYTHON, str(REVIEW_APP)]}},
    }


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("pool-cli")
    chat_log = folder / "chat-sent.jsonl"
    with StackBuilder(folder).apps(_apps(chat_log)).bridge().supervisor().gateway().router().running() as running:
        yield Stack(running.url, cli_here_runner(running.url), folder, chat_log, running["gateway"])


def _excluded(reply: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["tool"]: e for e in reply["excluded"]}


def _available(reply: dict[str, Any]) -> set[str]:
    return {t["name"] for t in reply["available"]}


# --------------------------------------------------------------------------- tools


def test_tools_show_prints_the_definition(stack: Stack) -> None:
    tool = stack.json("tools", "show", "im.polaris.qq.send_message")
    assert tool["state"] == "PUBLISHED" and tool["version"] == 1 and tool["side_effect"] == "write"
    assert tool["execution"] == {"kind": "mcp", "app": "im.polaris.qq", "instance": "default", "tool": "send_message"}
    assert set(tool["input_schema"]["required"]) == {"session_id", "text"}

    text = stack.ok("tools", "show", "im.polaris.qq.send_message")
    assert "state:        PUBLISHED (version 1)" in text
    assert "side effect:  write" in text
    assert "execution:    mcp tool 'send_message' of app im.polaris.qq (default)" in text
    assert "session_id: string (required)" in text
    assert "discovered" in text  # the review notes

    assert stack.json("tools", "show", "im.polaris.qq.list_sent")["side_effect"] == "read"
    missing = stack.cli("tools", "show", "im.polaris.qq.nope")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr == "error: no tool 'im.polaris.qq.nope'\n"


def test_get_shows_tools_and_systems_with_their_columns(stack: Stack) -> None:
    tools = stack.ok("get", "tools")
    assert "SIDE_EFFECT" in tools
    line = next(x for x in tools.splitlines() if "test.review.broken" in x)
    assert "DRAFT" in line and "test.review" in line
    systems = stack.ok("get", "systems")
    assert "im.polaris.qq" in systems and "mcp" in systems
    assert stack.json("get", "systems", "test.echo")["type"] == "mcp"


def test_deprecated_tool_leaves_the_agents_available_set(stack: Stack) -> None:
    stack.apply_agent("deprecator", ["test.echo.counter_get", "test.echo.get_startup"])
    assert _available(stack.json("agents", "tools", "deprecator")) == {"test.echo.counter_get",
                                                                       "test.echo.get_startup"}
    out = stack.ok("tools", "deprecate", "test.echo.counter_get", "--note", "replaced by counters v2")
    assert out.startswith(f"test.echo.counter_get is DEPRECATED (version 1, by {getpass.getuser()})")
    try:
        reply = stack.json("agents", "tools", "deprecator")
        assert _available(reply) == {"test.echo.get_startup"}
        assert _excluded(reply)["test.echo.counter_get"] == {
            "tool": "test.echo.counter_get", "reason": "not_published", "detail": "the tool is DEPRECATED"}
        table = stack.ok("agents", "tools", "deprecator")
        row = next(x for x in table.splitlines() if "test.echo.counter_get" in x)
        assert "not_published" in row and "the tool is DEPRECATED" in row
        note = stack.json("tools", "show", "test.echo.counter_get")["notes"][-1]
        assert note["action"] == "deprecate" and note["by"] == getpass.getuser()
        assert note["note"] == "replaced by counters v2"
    finally:
        stack.ok("tools", "draft", "test.echo.counter_get")
        stack.ok("tools", "review", "test.echo.counter_get")
        stack.ok("tools", "publish", "test.echo.counter_get")
    assert "test.echo.counter_get" in _available(stack.json("agents", "tools", "deprecator"))


def test_publishing_an_invalid_draft_prints_every_reason(stack: Stack) -> None:
    assert stack.json("tools", "show", "test.review.broken")["state"] == "DRAFT"
    refused = stack.cli("tools", "publish", "test.review.broken", "--note", "try")
    assert refused.returncode == 1 and refused.stdout == ""
    lines = refused.stderr.splitlines()
    assert lines[0] == "error: cannot publish test.review.broken:"
    assert len(lines) == 4, refused.stderr
    assert lines[1] == "  - the tool is DRAFT: publish applies to REVIEWING only"
    assert lines[2].startswith("  - input_schema is not a valid JSON Schema")
    assert lines[3] == "  - description is empty: the model needs to know what the tool does"
    assert stack.json("tools", "show", "test.review.broken")["state"] == "DRAFT"

    stack.apply_agent("reviewer", ["test.review.lookup", "test.review.broken"])
    reply = stack.json("agents", "tools", "reviewer")
    assert _excluded(reply)["test.review.lookup"]["detail"] == "the tool is DRAFT"
    stack.ok("tools", "review", "test.review.lookup")
    published = stack.json("tools", "publish", "test.review.lookup", "--note", "checked")
    assert published["state"] == "PUBLISHED"
    assert [n["action"] for n in published["notes"]][-2:] == ["review", "publish"]
    reply = stack.json("agents", "tools", "reviewer")
    assert "test.review.lookup" in _available(reply)
    assert _excluded(reply)["test.review.broken"]["reason"] == "not_published"

    again = stack.cli("tools", "review", "test.review.lookup")
    assert again.returncode == 1
    assert again.stderr.splitlines() == ["error: cannot review test.review.lookup:",
                                         "  - the tool is PUBLISHED: review applies to DRAFT only"]


# --------------------------------------------------------------------------- systems


def test_a_disabled_system_leaves_every_available_set(stack: Stack) -> None:
    stack.apply_agent("disabler", ["test.echo.echo", "im.polaris.qq.get_user_info"])
    systems = {s["name"]: s for s in stack.json("systems")}
    assert systems["test.echo"]["enabled"] is True and systems["test.echo"]["health"] == "connected"
    assert systems["test.echo"]["tools"] == 13  # every tool of tests/apps/echo_app.py
    assert "disabled" in stack.ok("systems", "disable", "test.echo")
    try:
        assert {s["name"]: s for s in stack.json("systems")}["test.echo"]["enabled"] is False
        reply = stack.json("agents", "tools", "disabler")
        assert _available(reply) == {"im.polaris.qq.get_user_info"}
        assert _excluded(reply)["test.echo.echo"] == {
            "tool": "test.echo.echo", "reason": "system_disabled", "detail": "system 'test.echo' is disabled"}
        called = stack.cli("tools", "call", "test.echo.echo", "--args", '{"value": 1}', "--json")
        assert called.returncode == 3
        assert json.loads(called.stdout)["error"]["code"] == "system_disabled"
        row = next(x for x in stack.ok("systems").splitlines() if "test.echo" in x)
        assert " NO " in row and "connected" in row
    finally:
        stack.ok("systems", "enable", "test.echo")
    assert "test.echo.echo" in _available(stack.json("agents", "tools", "disabler"))
    unknown = stack.cli("systems", "disable", "no.such.system")
    assert unknown.returncode == 1 and unknown.stderr == "error: no system named 'no.such.system'\n"


def test_import_openapi_creates_drafts_and_a_second_import_changes_nothing(stack: Stack) -> None:
    spec = str(PETSTORE.relative_to(REPO))  # relative to the CLI's working directory, not the gateway's
    args = ("systems", "import-openapi", "petstore", "--base-url", "http://127.0.0.1:9/api/v3", "--spec", spec)
    first = stack.json(*args)
    created = set(first["created"])
    assert first["system"] == "petstore" and first["updated"] == [] and first["unchanged"] == []
    assert {"petstore.addPet", "petstore.getPetById"} <= created
    assert first["missing"]["petstore.addPet"]  # the reviewer's list

    again = stack.ok(*args).splitlines()
    assert again[0].startswith(f"system petstore (Swagger Petstore - OpenAPI 3.0): 0 created, 0 updated, "
                               f"{len(created)} unchanged")
    assert "  unchanged petstore.getPetById  (2 missing)" in again
    assert "missing (for the reviewer):" in again

    tool = stack.json("tools", "show", "petstore.getPetById")
    assert tool["state"] == "DRAFT" and tool["source"] == "openapi" and tool["side_effect"] == "read"
    assert (tool["execution"]["method"], tool["execution"]["path"]) == ("GET", "/pet/{petId}")
    shown = stack.ok("tools", "show", "petstore.getPetById")
    assert "execution:    http GET /pet/{petId}" in shown
    assert "  petId → path, required" in shown and "petId: integer (required)" in shown
    assert "missing:\n  - " in shown
    system = {s["name"]: s for s in stack.json("systems")}["petstore"]
    assert (system["type"], system["base_url"], system["circuit"]) == ("http", "http://127.0.0.1:9/api/v3", "closed")


def test_import_openapi_checks_its_arguments_before_asking(stack: Stack) -> None:
    missing = stack.cli("systems", "import-openapi", "petstore", "--base-url", "http://x", "--spec", "nope.json")
    assert missing.returncode == 2 and "--spec nope.json: no such file" in missing.stderr
    bad_url = stack.cli("systems", "import-openapi", "petstore", "--base-url", "ftp://x", "--spec", "nope.json")
    assert bad_url.returncode == 2 and "--base-url 'ftp://x' must be an http:// or https:// URL" in bad_url.stderr


# --------------------------------------------------------------------------- approvals and audit


async def _call(url: str, arguments: dict[str, Any], context: dict[str, Any]) -> dict[str, Any]:
    envelope = {"header": {"protocol": "amp/1.0", "method": "tools/call", "message_id": str(uuid.uuid4()),
                           "timestamp": "2026-06-19T12:00:00+08:00", "source": {"app": "tests"}},
                "payload": {"tool": "im.polaris.qq.send_message", "arguments": arguments, "context": context}}
    nc = await nats.connect(url)
    try:
        if context.get("agent"):  # an agent's call is its run's: recorded as the router would
            record = await dispatched(nc, SUBJECTS, agent=context["agent"], run_id=context["task_id"],
                                      session_id=context.get("session_id"))
            envelope["payload"]["context"] = {**context, **run_context(record)}
        subject = SUBJECTS.tool_call if context.get("agent") else SUBJECTS.operator_tool_call
        reply = await nc.request(subject, json.dumps(envelope, ensure_ascii=False).encode(), timeout=15)
    finally:
        await nc.close()
    payload: dict[str, Any] = json.loads(reply.data)["payload"]
    return payload


def _sent(stack: Stack) -> list[dict[str, Any]]:
    if not stack.chat_log.exists():
        return []
    return [json.loads(line) for line in stack.chat_log.read_text(encoding="utf-8").splitlines()]


async def test_approvals_grant_deny_round_trip_and_the_audit_shows_it(stack: Stack) -> None:
    stack.apply_agent("approver", ["im.polaris.qq.send_message"])
    task = f"task-{uuid.uuid4().hex[:8]}"
    context = {"agent": "approver", "task_id": task, "session_id": "group_1"}
    hello = {"session_id": "group_1", "text": "你好"}

    asked = await _call(stack.url, hello, context)
    assert asked["status"] == "needs_approval" and asked["approval_id"], asked
    approval_id = asked["approval_id"]
    pending = stack.json("approvals", "list", "--state", "pending")
    assert [a["id"] for a in pending if a["task_id"] == task] == [approval_id]
    assert approval_id in stack.ok("approvals", "list")
    assert _sent(stack) == []

    granted = stack.ok("approvals", "grant", approval_id, "--note", "fine")
    # Who decided is who the server authenticated (no credentials here: the `operator` identity),
    # not the OS user name the CLI still sends for older gateways.
    assert granted.startswith(f"{approval_id} granted by operator: im.polaris.qq.send_message ")
    done = await _call(stack.url, hello, {**context, "approval_id": approval_id})
    assert done["status"] == "ok" and done["approval_id"] == approval_id, done
    replay = await _call(stack.url, hello, {**context, "approval_id": approval_id})
    assert replay["status"] == "denied" and replay["error"]["code"] == "approval_used", replay
    twice = stack.cli("approvals", "grant", approval_id)
    assert twice.returncode == 1 and twice.stderr == f"error: approval {approval_id} is already consumed\n"
    assert [(m["session_id"], m["text"]) for m in _sent(stack)] == [("group_1", "你好")]

    other = await _call(stack.url, {**hello, "text": "再见"}, context)
    assert other["status"] == "needs_approval" and other["approval_id"] != approval_id
    denied = stack.json("approvals", "deny", other["approval_id"], "--note", "no")
    assert denied["state"] == "denied" and denied["decided_by"] == "operator" and denied["note"] == "no"
    refused = await _call(stack.url, {**hello, "text": "再见"}, {**context, "approval_id": other["approval_id"]})
    assert refused["status"] == "denied" and refused["error"]["code"] == "approval_denied", refused
    assert len(_sent(stack)) == 1
    shown = stack.ok("approvals", "show", approval_id)
    assert "state:       consumed" in shown and "decided:" in shown and ": fine" in shown

    # Five calls of the chat app's tools, all by this test: the audit has one record for each.
    records = [json.loads(line) for line in stack.ok(
        "audit", "tail", "--app", "im.polaris.qq", "--from-start", "--count", "5", "--timeout", "15",
        "--json").splitlines()]
    assert [(r["status"], r["approval_id"], r["error_code"]) for r in records] == [
        ("needs_approval", approval_id, None), ("ok", approval_id, None),
        ("denied", approval_id, "approval_used"), ("needs_approval", other["approval_id"], None),
        ("denied", other["approval_id"], "approval_denied")]
    assert {(r["caller"], r["task_id"], r["tool"]) for r in records} == {
        ("agent:approver", task, "im.polaris.qq.send_message")}
    readable = stack.ok("audit", "tail", "--app", "im.polaris.qq", "--from-start", "--count", "5",
                        "--timeout", "15").splitlines()
    assert len(readable) == 5
    assert "agent:approver  im.polaris.qq.send_message  needs_approval  " in readable[0]
    assert f"approval={approval_id}" in readable[0] and f"task={task}" in readable[0]
    assert "error=approval_used: " in readable[2]
    too_many = stack.cli("audit", "tail", "--app", "im.polaris.qq", "--from-start", "--count", "6",
                         "--timeout", "1", "--json")
    assert too_many.returncode == 1 and len(too_many.stdout.splitlines()) == 5
    assert "timed out after 1.0s with 5 of 6 records" in too_many.stderr
