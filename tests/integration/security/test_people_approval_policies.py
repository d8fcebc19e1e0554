"""Operators are people, and approval policies say who may decide what: the five services with
their own users, and people from `aurora users` (generated permissions, deploy/nats-auth.conf's
`# @people` line), on a real nats-server.

What each test shows: a viewer changes nothing (admin mutations, JetStream writes, another
person's subject: all refused by the server); the gateway checks a person's roles again in the
registry; an approver outside a tool's policy cannot grant it, nor can the requester, and a name
in the body changes nothing; a dangerous tool needs two different approvers before its task
resumes; every decision is on the audit and in an event, naming the authenticated person.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from nats.errors import TimeoutError as NatsTimeoutError

from aurora_cli.commands.events import build_native_event
from aurora_cli.devstack import Credentials
from shared.clock import now_iso
from shared.contracts.run import run_id_for
from shared.contracts.signals import NativeEventSignal
from shared.contracts.subjects import Subjects
from shared.nats import write_through
from shared.nats.admin_service import AdminRequestError, admin_request
from shared.nats.signal_publisher import new_signal_id, publish_signal
from tests.harness.people_stack import people_stack
from tests.harness.processes import REPO
from tests.harness.runs import ECHO, PYTHON, RUNNER_ENV, poll, stdio, write_apps
from tests.harness.secure_nats import Session, open_session

SUBJECTS = Subjects("amp")
# name → (roles, app actors): the registry's view. `dan` and `otto` are in the server's config only.
PEOPLE: dict[str, tuple[list[str], list[str]]] = {
    "root": (["operator", "approver", "admin"], []),  # the registry keeps roles in this order
    "vera": (["viewer"], []),
    "amy": (["approver"], []),
    "bob": (["approver"], []),
    "carl": (["approver"], [f"{ECHO}:carl-chat"]),
    "erin": (["approver"], []),
    "opal": (["operator"], []),
    "ada": (["admin"], []),
}
SERVER_ONLY = {"dan": ["approver"], "otto": ["operator"]}
POLICY = {"kind": "ApprovalPolicy", "id": "echo-counters", "tools": [f"{ECHO}.counter_*"],
          "users": ["amy", "carl", "erin"]}
DONE = ("succeeded", "failed", "unverified", "partial", "cancelled")


@dataclass
class Stack:
    url: str
    credentials: Credentials
    passwords: dict[str, str]
    counter_file: Path
    log_file: Path

    async def person(self, name: str) -> Session:
        return await open_session(self.url, name, self.passwords[name])

    async def service(self, user: str) -> Session:
        return await open_session(self.url, user, self.credentials.passwords[user])


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("people")
    counter_file = folder / "counter.jsonl"
    apps = write_apps(folder, {"echo": stdio([PYTHON, str(REPO / "tests" / "apps" / "echo_app.py")], package=ECHO,
                                             mcp={"env": {"ECHO_COUNTER_FILE": str(counter_file)}})})
    roles = {name: roles for name, (roles, _) in PEOPLE.items()} | SERVER_ONLY
    with people_stack(folder, roles, apps, extra_env=lambda name: RUNNER_ENV if name == "runner" else {}) as running:
        yield Stack(running.url, running.credentials, running.passwords, counter_file, running.log_file)


def as_person(name: str) -> Subjects:
    return Subjects("amp", person=name)


@pytest.fixture
async def registered(stack: Stack) -> AsyncIterator[None]:
    """The installation's `operator` identity adds the first admin; that admin adds the others
    (again for each test: adding someone as they are is `unchanged`)."""
    operator = await stack.service("operator")
    try:
        await admin_request(operator.nc, SUBJECTS, "users", "add", {"name": "root", "roles": PEOPLE["root"][0]})
    finally:
        await operator.nc.close()
    root = await stack.person("root")
    try:
        for name, (roles, actors) in PEOPLE.items():
            added = await admin_request(root.nc, as_person("root"), "users", "add",
                                        {"name": name, "roles": roles, "actors": actors})
            assert added["user"]["roles"] == roles
        await admin_request(root.nc, as_person("root"), "policies", "apply", {"document": POLICY})
    finally:
        await root.nc.close()
    yield


@pytest.fixture
async def root(stack: Stack, registered: None) -> AsyncIterator[Session]:
    session = await stack.person("root")
    yield session
    await session.nc.close()


async def root_request(root: Session, area: str, verb: str, body: dict[str, Any]) -> Any:
    return await admin_request(root.nc, as_person("root"), area, verb, body)


async def test_a_viewer_can_read_but_change_nothing(stack: Stack, registered: None) -> None:
    vera = await stack.person("vera")
    try:
        assert isinstance(await admin_request(vera.nc, as_person("vera"), "approvals", "list", {}), list)
        assert (await vera.nc.jetstream(timeout=2).stream_info("AMP_EVENTS")).config.name == "AMP_EVENTS"
        await vera.clean()
        for subject in ("amp.admin.bindings.apply.u.vera", "amp.admin.approvals.grant.u.vera",
                        "amp.admin.users.add.u.vera", "amp.admin.tools.call.u.vera", "amp.admin.tasks.cancel.u.vera",
                        "amp.admin.approvals.grant.u.root",  # another person's subject
                        "amp.admin.approvals.grant",  # the plain subject, whose sender nobody can tell
                        "$JS.API.STREAM.DELETE.AMP_EVENTS", "$JS.API.STREAM.CREATE.VERA",
                        "$JS.API.STREAM.PURGE.AMP_AUDIT", "$JS.API.CONSUMER.CREATE.AMP_EVENTS.vera_eph_x",
                        "$KV.AMP_BINDINGS.b1", "$KV.AMP_USERS.vera", "amp.sig.im_polaris_echo.native_event",
                        "amp.evt.im_polaris_echo.message.received"):
            await vera.nc.publish(subject, b"{}")
            await vera.refused(subject)
        with pytest.raises((NatsTimeoutError, TimeoutError)):
            await admin_request(vera.nc, as_person("vera"), "bindings", "apply", {"document": {}}, timeout=0.5)
    finally:
        await vera.nc.close()


async def test_the_gateway_checks_a_persons_roles_again_in_the_registry(stack: Stack, registered: None) -> None:
    """`dan` may publish grants by the server's (stale) config, but the registry does not know him."""
    dan = await stack.person("dan")
    try:
        with pytest.raises(AdminRequestError) as refused:
            await admin_request(dan.nc, as_person("dan"), "approvals", "grant", {"id": "apr-x"})
        assert refused.value.code == "not_permitted" and "dan is not in the users registry" in str(refused.value)
    finally:
        await dan.nc.close()
    otto = await stack.person("otto")  # the router and the runner check him again too
    try:
        for area, verb, body in (("bindings", "apply", {"document": {}}), ("tasks", "cancel", {"id": "t-x"})):
            with pytest.raises(AdminRequestError) as refused:
                await admin_request(otto.nc, as_person("otto"), area, verb, body, timeout=10)
            assert refused.value.code == "not_permitted", (area, verb, str(refused.value))
    finally:
        await otto.nc.close()


async def start_task(stack: Stack, root: Session, tool: str, *, actor: str | None) -> tuple[str, str]:
    """A playbook agent calling `tool` for an event (by `actor`); its task waits for an approval:
    (task id, approval id)."""
    case = f"p-{uuid.uuid4().hex[:6]}"
    agent = {"kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"],
             "tools": [f"{ECHO}.{tool}"],
             "playbook": {"steps": [{"id": "step", "tool": f"{ECHO}.{tool}", "arguments": {"key": case}}],
                          "answer": "done"}}
    await root_request(root, "agents", "apply", {"document": agent})
    binding = {"kind": "Binding", "id": f"b-{case}", "event_pattern": "message.received",
               "filters": [{"field": "data.case", "op": "eq", "value": case}],
               "target_type": "agent", "target_id": agent["id"], "priority": 10}
    await root_request(root, "bindings", "apply", {"document": binding})
    event = build_native_event("message.received", app_id=ECHO, data={"case": case})
    if actor is not None:
        event["payload"]["actor"] = {"id": actor, "kind": "user"}
    operator = await stack.service("operator")
    try:
        signal = NativeEventSignal(signal_id=new_signal_id(), app=ECHO, observed_at=now_iso(), event=event)
        await publish_signal(operator.nc.jetstream(), SUBJECTS, signal)
    finally:
        await operator.nc.close()
    task = await settled(root, run_id_for(event["header"]["message_id"], str(binding["id"])), ("awaiting_approval",))
    return task["id"], task["approval_id"]


async def settled(root: Session, task_id: str, states: tuple[str, ...]) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        try:
            task: dict[str, Any] = await root_request(root, "tasks", "get", {"id": task_id})
        except AdminRequestError:
            return None
        return task if task["state"] in states else None

    found: dict[str, Any] = await poll(probe, timeout=30, what=f"task {task_id} in {states}")
    return found


async def decide(stack: Stack, name: str, verb: str, approval_id: str, **extra: Any) -> dict[str, Any]:
    session = await stack.person(name)
    try:
        answer: dict[str, Any] = await admin_request(session.nc, as_person(name), "approvals", verb,
                                                     {"id": approval_id, **extra})
        return answer
    finally:
        await session.nc.close()


async def refused_decision(stack: Stack, name: str, approval_id: str) -> str:
    with pytest.raises(AdminRequestError) as refused:
        await decide(stack, name, "grant", approval_id)
    assert refused.value.code == "not_permitted", str(refused.value)
    return str(refused.value)


async def audit_of(root: Session, approval_id: str, count: int) -> list[dict[str, Any]]:
    """The audit records of decisions on `approval_id`, once there are `count` of them."""
    js = root.nc.jetstream(timeout=5)

    async def probe() -> list[dict[str, Any]] | None:
        info = await js.stream_info("AMP_AUDIT")
        records = []
        for seq in range(info.state.first_seq, info.state.last_seq + 1):
            record = json.loads((await js.get_msg("AMP_AUDIT", seq)).data or b"{}")
            if record.get("approval_id") == approval_id and str(record.get("status")).startswith("approval_"):
                records.append(record)
        return records if len(records) >= count else None

    found: list[dict[str, Any]] = await poll(probe, timeout=15, what=f"{count} decision records of {approval_id}")
    return found


async def test_only_the_policys_approvers_may_grant_and_never_the_requester(
        stack: Stack, root: Session) -> None:
    events: list[dict[str, Any]] = []
    watcher = await stack.service("consumer")

    async def keep(msg: Any) -> None:
        events.append(json.loads(msg.data))

    await watcher.nc.subscribe("amp.evt.aurora_gateway.approval.>", cb=keep)
    await write_through.flush(watcher.nc)
    task_id, approval_id = await start_task(stack, root, "counter_increment", actor="carl-chat")
    shown = await root_request(root, "approvals", "get", {"id": approval_id})
    assert shown["requested_by"] == f"{ECHO}:carl-chat"
    assert shown["may_decide"]["users"] == ["amy", "carl", "erin"] and shown["may_decide"]["policies"] == [
        "echo-counters"]

    assert "may not decide this approval" in await refused_decision(stack, "bob", approval_id)  # outside the policy
    assert "requested this call" in await refused_decision(stack, "carl", approval_id)  # the requester
    assert (await root_request(root, "approvals", "get", {"id": approval_id}))["state"] == "pending"
    granted = await decide(stack, "amy", "grant", approval_id, by="root")  # a name in the body decides nothing
    assert granted["state"] == "granted" and granted["decided_by"] == "amy"
    assert [g["by"] for g in granted["grants"]] == ["amy"]

    done = await settled(root, task_id, DONE)
    assert done["state"] == "succeeded", json.dumps(done)[:1500]
    records = await audit_of(root, approval_id, 3)
    assert sorted((r["caller"], r["status"]) for r in records) == [
        ("person:amy", "approval_granted"), ("person:bob", "approval_not_permitted"),
        ("person:carl", "approval_not_permitted")]

    async def announced() -> set[tuple[str, str]] | None:
        mine = {(e["payload"]["type"], e["payload"]["data"].get("by") or e["payload"]["data"].get("decided_by"))
                for e in events if (e["payload"].get("data") or {}).get("id") == approval_id}
        wanted = {("approval.decision_refused", "bob"), ("approval.decision_refused", "carl"),
                  ("approval.granted", "amy")}
        return mine if wanted <= mine else None

    await poll(announced, timeout=15, what="the decision events naming bob, carl and amy")
    await watcher.nc.close()


async def test_a_dangerous_tool_needs_two_different_approvers(stack: Stack, root: Session) -> None:
    task_id, approval_id = await start_task(stack, root, "counter_purge", actor=None)
    first = await decide(stack, "amy", "grant", approval_id)
    assert first["state"] == "pending" and first["required_grants"] == 2
    assert [g["by"] for g in first["grants"]] == ["amy"]
    assert "already granted" in await refused_decision(stack, "amy", approval_id)
    assert (await root_request(root, "tasks", "get", {"id": task_id}))["state"] == "awaiting_approval"
    assert "purge:" not in (stack.counter_file.read_text() if stack.counter_file.exists() else "")
    second = await decide(stack, "erin", "grant", approval_id)
    assert second["state"] == "granted" and [g["by"] for g in second["grants"]] == ["amy", "erin"]
    done = await settled(root, task_id, DONE)
    assert done["state"] == "succeeded", json.dumps(done)[:1500]
    assert stack.counter_file.read_text().count("purge:") == 1
    records = await audit_of(root, approval_id, 3)
    assert sorted((r["caller"], r["status"]) for r in records) == [
        ("person:amy", "approval_grant_recorded"), ("person:amy", "approval_not_permitted"),
        ("person:erin", "approval_granted")]


async def test_the_shared_operator_identity_is_never_one_of_the_two_eyes(stack: Stack, root: Session) -> None:
    """`aurora dev` leaves its user both a person's credentials and the shared `operator` ones:
    granting as each must not make two eyes of one person."""
    task_id, approval_id = await start_task(stack, root, "counter_purge", actor=None)
    first = await decide(stack, "amy", "grant", approval_id)
    assert first["state"] == "pending" and first["required_grants"] == 2
    operator = await stack.service("operator")
    try:
        with pytest.raises(AdminRequestError) as refused:
            await admin_request(operator.nc, SUBJECTS, "approvals", "grant", {"id": approval_id})
    finally:
        await operator.nc.close()
    assert refused.value.code == "not_permitted" and "shared identity" in str(refused.value), str(refused.value)
    assert (await root_request(root, "tasks", "get", {"id": task_id}))["state"] == "awaiting_approval"
    second = await decide(stack, "erin", "grant", approval_id)
    assert second["state"] == "granted" and [g["by"] for g in second["grants"]] == ["amy", "erin"]
    assert (await settled(root, task_id, DONE))["state"] == "succeeded"
    records = await audit_of(root, approval_id, 3)
    assert ("operator", "approval_not_permitted") in [(r["caller"], r["status"]) for r in records]


# The attack matrix's people columns: one person per role, what nats-server lets each publish.
# `{me}` is the person's own name. "allowed" = no permissions violation (the request may still fail).
ROLE_PEOPLE = {"viewer": "vera", "operator": "opal", "approver": "amy", "admin": "ada"}
A, R = "allowed", "refused"
PEOPLE_MATRIX: list[tuple[str, str, tuple[str, str, str, str]]] = [
    ("read: list approvals", "amp.admin.approvals.list.u.{me}", (A, A, A, A)),
    ("read: stream info", "$JS.API.STREAM.INFO.AMP_EVENTS", (A, A, A, A)),
    ("change a binding", "amp.admin.bindings.apply.u.{me}", (R, A, R, R)),
    ("replay events that found no route", "amp.admin.router.replay.u.{me}", (R, A, R, R)),
    ("replay a dead-lettered run", "amp.admin.router.replay_run.u.{me}", (R, A, R, R)),
    ("call a tool as operator", "amp.admin.tools.call.u.{me}", (R, A, R, R)),
    ("edit a draft tool's wording", "amp.admin.tools.edit.u.{me}", (R, A, R, R)),
    ("emit a native event", "amp.sig.im_polaris_echo.native_event", (R, A, R, A)),
    ("grant an approval", "amp.admin.approvals.grant.u.{me}", (R, R, A, R)),
    ("add a user", "amp.admin.users.add.u.{me}", (R, R, R, A)),
    ("apply an approval policy", "amp.admin.policies.apply.u.{me}", (R, R, R, A)),
    ("delete a stream (JetStream admin)", "$JS.API.STREAM.DELETE.NO_SUCH_STREAM", (R, R, R, A)),
    ("create a stream", "$JS.API.STREAM.CREATE.NO_SUCH_STREAM", (R, R, R, A)),
    ("request as another person", "amp.admin.approvals.grant.u.root", (R, R, R, R)),
    ("request on the plain admin subject", "amp.admin.approvals.grant", (R, R, R, R)),
    ("write a bucket directly", "$KV.AMP_APPROVALS.apr-x", (R, R, R, R)),
    ("speak MCP", "amp.mcp.im_polaris_echo.default.c2s", (R, R, R, R)),
    ("call a tool as an agent", "amp.tool.call", (R, R, R, R)),
    ("forge a platform service's events", "amp.sig.aurora_gateway.platform_event", (R, R, R, R)),
]


def render_people_matrix() -> str:
    """The table docs/guides/people.md shows."""
    lines = ["| action | " + " | ".join(ROLE_PEOPLE) + " |", "|---|" + "---|" * len(ROLE_PEOPLE)]
    lines += [f"| {text} (`{subject}`) | " + " | ".join(cells) + " |" for text, subject, cells in PEOPLE_MATRIX]
    return "\n".join(lines)


@pytest.mark.parametrize("role", list(ROLE_PEOPLE))
async def test_the_attack_matrix_for_people(stack: Stack, registered: None, role: str) -> None:
    name = ROLE_PEOPLE[role]
    column = list(ROLE_PEOPLE).index(role)
    session = await stack.person(name)
    try:
        seen: dict[str, str] = {}
        for _, pattern, _ in PEOPLE_MATRIX:
            subject = pattern.format(me=name)
            start = len(session.errors)
            await session.nc.publish(subject, b"{}")
            await session.nc.request("$JS.API.INFO", b"", timeout=5)  # the server handled the publish
            wanted = f'permissions violation for publish to "{subject}"'.lower()
            seen[subject] = R if any(wanted in str(e).lower() for e in session.errors[start:]) else A
        expected = {pattern.format(me=name): cells[column] for _, pattern, cells in PEOPLE_MATRIX}
        assert seen == expected
    finally:
        await session.nc.close()


if __name__ == "__main__":
    print(render_people_matrix())
