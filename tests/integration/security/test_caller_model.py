"""One gate for every caller, on a real nats-server with people and each identity's own
credentials: a person whose only role is `operator`, and the installation's shared `operator`
identity, call tools an ApprovalPolicy covers; the calls wait for the policy's approvers as an
agent's would, a grant runs each exactly once, and four eyes are two people, never the shared
identity. Every refusal is on the audit, naming who called and why.

The policy is the attack's: `{tools: [<echo>.counter_*], roles: [approver], dangerous_needs_two:
true}`; `counter_purge` is dangerous, `counter_increment` a write, and each that runs leaves a
line in the echo app's counter file.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import AdminRequestError, admin_request
from tests.harness.cli_here import run_cli_here
from tests.harness.people_stack import PeopleStack, people_stack
from tests.harness.processes import REPO
from tests.harness.runs import ECHO, PYTHON, stdio, write_apps
from tests.harness.secure_nats import Session, open_session
from tests.harness.waiting import poll

SUBJECTS = Subjects("amp")
PEOPLE = {"root": ["operator", "approver", "admin"], "oscar": ["operator"], "amy": ["approver"],
          "bob": ["approver"], "otto": ["operator"]}  # otto: in the server's config, not in the registry
POLICY = {"kind": "ApprovalPolicy", "id": "echo-four-eyes", "tools": [f"{ECHO}.counter_*"], "roles": ["approver"],
          "dangerous_needs_two": True}
PURGE, INCREMENT = f"{ECHO}.counter_purge", f"{ECHO}.counter_increment"


@dataclass
class Stack:
    running: PeopleStack
    counter_file: Path

    async def session(self, user: str) -> Session:
        return await open_session(self.running.url, user, self.running.password(user))

    def ran(self, key: str) -> int:
        """How many times a counter tool ran for `key` (purges count under `purge:<key>`)."""
        text = self.counter_file.read_text() if self.counter_file.exists() else ""
        return sum(1 for line in text.splitlines() if json.loads(line).get("key") in (key, f"purge:{key}"))


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("callers")
    counter_file = folder / "counter.jsonl"
    apps = write_apps(folder, {"echo": stdio([PYTHON, str(REPO / "tests" / "apps" / "echo_app.py")], package=ECHO,
                                             mcp={"env": {"ECHO_COUNTER_FILE": str(counter_file)}})})
    with people_stack(folder, PEOPLE, apps, services=("app_supervisor", "mcp_gateway")) as running:
        yield Stack(running, counter_file)


@pytest.fixture
async def registered(stack: Stack) -> AsyncIterator[None]:
    """The operator identity adds the first admin; the admin adds the others and the policy (again
    for each test: adding what is there already changes nothing)."""
    operator = await stack.session("operator")
    await admin_request(operator.nc, SUBJECTS, "users", "add", {"name": "root", "roles": PEOPLE["root"]})
    await operator.nc.close()
    root = await stack.session("root")
    for name in ("oscar", "amy", "bob"):
        await admin_request(root.nc, as_person("root"), "users", "add", {"name": name, "roles": PEOPLE[name]})
    await admin_request(root.nc, as_person("root"), "policies", "apply", {"document": POLICY})
    await root.nc.close()
    await until_the_echo_app_serves(stack)
    yield


def as_person(name: str) -> Subjects:
    return Subjects("amp", person=name)


async def until_the_echo_app_serves(stack: Stack) -> None:
    operator = await stack.session("operator")

    async def listed() -> bool | None:
        tools = await admin_request(operator.nc, SUBJECTS, "gateway", "tools", {"app": None})
        return True if PURGE in {t["name"] for t in tools} else None

    await poll(listed, timeout=30, what="the echo app's tools in the gateway's catalog")
    await operator.nc.close()


async def call_as(stack: Stack, user: str, tool: str, key: str, *, task: str,
                  approval: str | None = None) -> dict[str, Any]:
    """A tool call with `user`'s own credentials: a person on `….u.<name>`, the shared identity on
    the plain operator subject."""
    session = await stack.session(user)
    subject = SUBJECTS.operator_tool_call if user == "operator" else f"{SUBJECTS.operator_tool_call}.u.{user}"
    envelope = {"header": {"protocol": "amp/1.0", "method": "tools/call", "message_id": str(uuid.uuid4()),
                           "timestamp": "2026-12-05T12:00:00Z", "source": {"app": "tests"}},
                "payload": {"tool": tool, "arguments": {"key": key},
                            "context": {"task_id": task, **({"approval_id": approval} if approval else {})}}}
    try:
        reply = await session.nc.request(subject, json.dumps(envelope).encode(), timeout=20)
    finally:
        await session.nc.close()
    payload: dict[str, Any] = json.loads(reply.data)["payload"]
    return payload


async def grant(stack: Stack, user: str, approval_id: str) -> dict[str, Any]:
    session = await stack.session(user)
    try:
        subjects = SUBJECTS if user == "operator" else as_person(user)
        answer: dict[str, Any] = await admin_request(session.nc, subjects, "approvals", "grant", {"id": approval_id})
        return answer
    finally:
        await session.nc.close()


async def refused_grant(stack: Stack, user: str, approval_id: str) -> str:
    with pytest.raises(AdminRequestError) as refused:
        await grant(stack, user, approval_id)
    assert refused.value.code == "not_permitted", str(refused.value)
    return str(refused.value)


async def audited(stack: Stack, wanted: dict[str, Any], count: int = 1) -> list[dict[str, Any]]:
    """The audit records whose fields include `wanted`, once there are `count` of them."""
    root = await stack.session("root")
    js = root.nc.jetstream(timeout=5)

    async def probe() -> list[dict[str, Any]] | None:
        info = await js.stream_info("AMP_AUDIT")
        found = []
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            record = json.loads((await js.get_msg("AMP_AUDIT", seq)).data or b"{}")
            if all(record.get(k) == v for k, v in wanted.items()):
                found.append(record)
        return found if len(found) >= count else None

    try:
        records: list[dict[str, Any]] = await poll(probe, timeout=15, what=f"{count} audit records like {wanted}")
        return records
    finally:
        await root.nc.close()


async def test_a_person_with_only_the_operator_role_waits_for_two_approvers(stack: Stack, registered: None) -> None:
    """Attack 1 and 4: oscar's dangerous call waits; neither oscar, nor the shared identity, nor one
    approver twice makes it run; two approvers do, and it runs once, for oscar alone."""
    key, task = f"k-{uuid.uuid4().hex[:6]}", "cli-oscar-1"
    held = await call_as(stack, "oscar", PURGE, key, task=task)
    assert held["status"] == "needs_approval", held
    approval_id = held["approval_id"]
    early = await call_as(stack, "oscar", PURGE, key, task=task, approval=approval_id)
    assert early["status"] == "denied" and early["error"]["code"] == "approval_pending", early

    oscar = await stack.session("oscar")  # the operator role may not grant at all: nats-server refuses
    await oscar.nc.publish("amp.admin.approvals.grant.u.oscar", json.dumps({"id": approval_id}).encode())
    await oscar.refused("amp.admin.approvals.grant.u.oscar")
    await oscar.nc.close()
    first = await grant(stack, "amy", approval_id)
    assert first["state"] == "pending" and first["required_grants"] == 2 and first["requested_by"] == "oscar"
    assert "already granted" in await refused_grant(stack, "amy", approval_id)
    assert "shared identity" in await refused_grant(stack, "operator", approval_id)  # never the second eye
    assert stack.ran(key) == 0
    second = await grant(stack, "bob", approval_id)
    assert second["state"] == "granted" and [g["by"] for g in second["grants"]] == ["amy", "bob"]

    # The approval is oscar's: root presenting it under the same task id is not oscar's call.
    stolen = await call_as(stack, "root", PURGE, key, task=task, approval=approval_id)
    assert stolen["status"] == "denied" and stolen["error"]["code"] == "approval_mismatch", stolen
    done = await call_as(stack, "oscar", PURGE, key, task=task, approval=approval_id)
    assert done["status"] == "ok" and done["approval_id"] == approval_id, done
    again = await call_as(stack, "oscar", PURGE, key, task=task, approval=approval_id)
    assert again["error"]["code"] == "approval_used", again
    assert stack.ran(key) == 1

    records = await audited(stack, {"tool": PURGE, "approval_id": approval_id}, count=9)
    calls = sorted((r["caller"], r["status"], r["error_code"]) for r in records if "decision" not in r["call_id"])
    assert calls == [("person:oscar", "denied", "approval_pending"), ("person:oscar", "denied", "approval_used"),
                     ("person:oscar", "needs_approval", None), ("person:oscar", "ok", None),
                     ("person:root", "denied", "approval_mismatch")]
    decisions = sorted((r["caller"], r["status"]) for r in records if "decision" in r["call_id"])
    assert ("operator", "approval_not_permitted") in decisions and ("person:amy", "approval_not_permitted") in decisions


async def test_the_shared_operator_identity_waits_and_cannot_grant_its_own_call(stack: Stack, registered: None) -> None:
    key, task = f"k-{uuid.uuid4().hex[:6]}", "cli-op-1"
    held = await call_as(stack, "operator", INCREMENT, key, task=task)
    assert held["status"] == "needs_approval", held
    assert "shared identity" in await refused_grant(stack, "operator", held["approval_id"])
    assert stack.ran(key) == 0
    granted = await grant(stack, "amy", held["approval_id"])  # a write: one approver
    assert granted["state"] == "granted"
    done = await call_as(stack, "operator", INCREMENT, key, task=task, approval=held["approval_id"])
    assert done["status"] == "ok", done
    assert stack.ran(key) == 1
    await audited(stack, {"caller": "operator", "tool": INCREMENT, "status": "ok", "approval_id": held["approval_id"]})


async def test_a_person_the_registry_does_not_know_is_refused_and_audited(stack: Stack, registered: None) -> None:
    """otto may publish by the server's config, but the registry does not know him: refused, and on
    the audit as otto, with the reason."""
    refused = await call_as(stack, "otto", INCREMENT, "otto", task="cli-otto")
    assert refused["status"] == "denied" and refused["error"]["code"] == "not_permitted", refused
    [record] = await audited(stack, {"caller": "person:otto", "tool": INCREMENT})
    assert record["error_code"] == "not_permitted" and "otto is not in the users registry" in record["error_message"]
    assert stack.ran("otto") == 0


def cli_env(stack: Stack, user: str) -> dict[str, str]:
    return {"NATS_URL": stack.running.url, "NATS_USER": user, "NATS_PASSWORD": stack.running.password(user)}


async def pending_of(stack: Stack, tool: str, requested_by: str, key: str) -> str:
    root = await stack.session("root")

    async def probe() -> str | None:
        for approval in await admin_request(root.nc, as_person("root"), "approvals", "list", {"state": "pending"}):
            if (approval["tool"], approval["requested_by"], approval["arguments"].get("key")) == (
                    tool, requested_by, key):
                return str(approval["id"])
        return None

    try:
        found: str = await poll(probe, timeout=20, what=f"{requested_by}'s pending approval of {tool}")
        return found
    finally:
        await root.nc.close()


async def test_aurora_tools_call_waits_for_the_grant_and_runs_once(stack: Stack, registered: None) -> None:
    key = f"k-{uuid.uuid4().hex[:6]}"
    args = ["tools", "call", INCREMENT, "--args", json.dumps({"key": key}), "--wait", "30"]
    waiting = asyncio.create_task(asyncio.to_thread(run_cli_here, args, cli_env(stack, "oscar")))
    approval_id = await pending_of(stack, INCREMENT, "oscar", key)
    assert stack.ran(key) == 0
    await grant(stack, "amy", approval_id)
    done = await waiting
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "status: ok" in done.stdout
    assert f"approval {approval_id} is pending" in done.stderr and f"approval {approval_id} granted" in done.stderr
    assert stack.ran(key) == 1


async def test_aurora_tools_call_without_wait_says_how_to_continue(stack: Stack, registered: None) -> None:
    key = f"k-{uuid.uuid4().hex[:6]}"
    env = cli_env(stack, "oscar")
    held = await asyncio.to_thread(run_cli_here, ["tools", "call", INCREMENT, "--args", json.dumps({"key": key})], env)
    assert held.returncode == 4 and "status: needs_approval" in held.stdout, (held.stdout, held.stderr)
    found = re.search(r"--task (\S+) --approval (\S+)", held.stderr)
    assert found is not None, held.stderr
    task, approval_id = found.groups()
    await grant(stack, "bob", approval_id)
    done = await asyncio.to_thread(run_cli_here, ["tools", "call", INCREMENT, "--args", json.dumps({"key": key}),
                                                  "--task", task, "--approval", approval_id], env)
    assert done.returncode == 0 and "status: ok" in done.stdout, (done.stdout, done.stderr)
    assert stack.ran(key) == 1
