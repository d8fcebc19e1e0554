"""The real services, each with its own NATS user from deploy/nats-auth.conf: an event still
becomes a run, the run's tool call still reaches the app through the gateway, the task events
still reach an external consumer, and the server refused nothing any service tried."""

from __future__ import annotations

import json
import subprocess
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import msgspec
import pytest
from nats.errors import TimeoutError as NatsTimeoutError

from aurora_cli.commands.events import build_native_event
from shared.clock import now_iso
from shared.contracts.envelope import Header, Source
from shared.contracts.run import run_id_for
from shared.contracts.signals import NativeEventSignal
from shared.contracts.subjects import Subjects
from shared.contracts.toolcall import (
    METHOD_CALL,
    ToolCallContext,
    ToolCallEnvelope,
    ToolCallRequest,
    decode_result,
)
from shared.nats import write_through
from shared.nats.admin_service import AdminRequestError, admin_request
from shared.nats.signal_publisher import new_signal_id, publish_signal
from tests.harness.cli import AURORA
from tests.harness.processes import REPO
from tests.harness.run_records import dispatched, run_context
from tests.harness.runs import ECHO, poll
from tests.harness.secure_nats import Session
from tests.harness.secure_stack import SERVICES, SecureStack, secure_stack
from tests.harness.waiting import TimedOut

SUBJECTS = Subjects("amp")


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureStack]:
    with secure_stack(tmp_path_factory.mktemp("secure-stack")) as stack:
        yield stack


@pytest.fixture
async def operator(stack: SecureStack) -> AsyncIterator[Session]:
    session = await stack.session("operator")
    yield session
    await session.nc.close()


def playbook_agent(agent_id: str, tool: str, arguments: dict[str, Any], answer: str) -> dict[str, Any]:
    return {"kind": "Agent", "id": agent_id, "agent_kind": "playbook", "events": ["*"], "tools": [f"{ECHO}.{tool}"],
            "playbook": {"steps": [{"id": "step", "tool": f"{ECHO}.{tool}", "arguments": arguments}],
                         "answer": answer}}


async def bind_agent(operator: Session, case: str, agent: dict[str, Any]) -> str:
    """The agent, and a binding of this case's `message.received` events to it (as the operator)."""
    await admin_request(operator.nc, SUBJECTS, "agents", "apply", {"document": agent})
    binding = {"kind": "Binding", "id": f"b-{case}", "event_pattern": "message.received",
               "filters": [{"field": "data.case", "op": "eq", "value": case}],
               "target_type": "agent", "target_id": agent["id"], "priority": 10}
    await admin_request(operator.nc, SUBJECTS, "bindings", "apply", {"document": binding})
    return str(binding["id"])


def aurora(stack: SecureStack, *args: str) -> Any:
    """The `aurora` CLI as the operator, `--json` output parsed."""
    done = subprocess.run([str(AURORA), *args, "--json"], env=stack.env("operator"), cwd=REPO,
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, f"aurora {' '.join(args)}: {done.stderr}"
    return json.loads(done.stdout)


async def settled_task(operator: Session, task_id: str, states: tuple[str, ...]) -> dict[str, Any]:
    seen: list[dict[str, Any] | str] = ["no such task"]

    async def probe() -> dict[str, Any] | None:
        try:
            task: dict[str, Any] = await admin_request(operator.nc, SUBJECTS, "tasks", "get", {"id": task_id})
        except AdminRequestError as exc:
            seen[0] = str(exc)
            return None
        seen[0] = task
        return task if task["state"] in states else None

    try:
        found: dict[str, Any] = await poll(probe, timeout=30, what=f"task {task_id} to reach one of {states}")
    except TimedOut as exc:  # what the task was last, for a failure that says where it stopped
        raise AssertionError(f"{exc}; the task as last seen: {json.dumps(seen[0])[:3000]}") from None
    return found


async def test_an_event_runs_an_agent_whose_tool_call_reaches_the_app(stack: SecureStack, operator: Session) -> None:
    case = f"sec-{uuid.uuid4().hex[:6]}"
    agent = playbook_agent(f"a-{case}", "echo", {"value": "{{ event.data.n }}"},
                           "echoed {{ steps.step.structured.value }}")
    binding_id = await bind_agent(operator, case, agent)
    consumer = await stack.session("consumer")
    seen: list[dict[str, Any]] = []

    async def keep(msg: Any) -> None:
        seen.append({"subject": msg.subject, **json.loads(msg.data)})

    await consumer.nc.subscribe(SUBJECTS.events_all, cb=keep)
    await write_through.flush(consumer.nc)

    # The operator's CLI sends a native event through the signal path (`aurora events emit`); it
    # is larger than the router's inline limit, so the runner reads it from the Object Store.
    data = {"n": 5, "case": case, "padding": "x" * 2000}
    emitted = aurora(stack, "events", "emit", "message.received", "--app", ECHO,  # no session: no reply
                     "--data", json.dumps(data), "--wait")
    assert emitted["status"] == "stored"

    task_id = run_id_for(emitted["message_id"], binding_id)
    task = await settled_task(operator, task_id, ("succeeded", "failed", "unverified", "partial"))
    assert task["state"] == "succeeded" and task["answer"] == "echoed 5", json.dumps(task)[:2000]
    assert task["event_ref"] is not None  # it did come by reference
    assert task_id in {t["id"] for t in aurora(stack, "tasks", "list")["items"]}

    async def reported() -> set[str]:
        """This case's event, the gateway's tool result and the runner's task events."""
        mine = [e for e in seen if {(e["payload"].get("data") or {}).get(k) for k in ("case", "run_id", "task_id")}
                & {case, task["run_id"], task["id"]}]
        types = {e["payload"]["type"] for e in mine}
        return types if {"message.received", "tool.succeeded", "task.succeeded"} <= types else set()

    await poll(reported, timeout=10, what="the event, the tool result and the task events at the consumer")
    for name, process in stack.processes.items():
        assert process.alive(), f"{name} exited:\n{process.logs()[-3000:]}"
    assert stack.nats.violations() == []  # every service did its job within its permissions
    await consumer.nc.close()


async def test_a_write_waits_for_an_approval_only_the_operator_grants(stack: SecureStack, operator: Session) -> None:
    case = f"apr-{uuid.uuid4().hex[:6]}"
    agent = playbook_agent(f"a-{case}", "counter_increment", {"key": case}, "counted")
    binding_id = await bind_agent(operator, case, agent)
    event = build_native_event("message.received", app_id=ECHO, data={"case": case})
    signal = NativeEventSignal(signal_id=new_signal_id(), app=ECHO, observed_at=now_iso(), event=event)
    await publish_signal(operator.nc.jetstream(), SUBJECTS, signal)  # what `aurora events emit` sends
    task = await settled_task(operator, run_id_for(event["header"]["message_id"], binding_id), ("awaiting_approval",))
    approval_id = task["approval_id"]
    assert (await admin_request(operator.nc, SUBJECTS, "approvals", "get", {"id": approval_id}))["state"] == "pending"

    runner = await stack.session("runner")
    try:
        with pytest.raises((NatsTimeoutError, TimeoutError)):
            await admin_request(runner.nc, SUBJECTS, "approvals", "grant", {"id": approval_id}, timeout=0.5)
        await runner.refused("amp.admin.approvals.grant")
    finally:
        await runner.nc.close()
    assert (await admin_request(operator.nc, SUBJECTS, "approvals", "get", {"id": approval_id}))["state"] == "pending"
    assert case not in (stack.counter_file.read_text() if stack.counter_file.exists() else "")  # nothing written
    granted = aurora(stack, "approvals", "grant", approval_id, "--note", "checked")
    assert granted["state"] == "granted"
    # The gateway's approval.granted event resumes the task (the runners' durable on the events
    # stream); the write runs once, with the approval.
    done = await settled_task(operator, task["id"], ("succeeded", "failed", "unverified", "partial", "cancelled"))
    assert done["state"] == "succeeded", json.dumps(done)[:2000]
    assert stack.counter_file.read_text().count(case) == 1
    refused = stack.nats.violations()
    assert refused and all('"$G/user:runner"' in line and "amp.admin.approvals.grant" in line for line in refused)


async def test_the_runner_cannot_call_a_tool_as_the_operator(stack: SecureStack) -> None:
    """Operator calls have their own subject, which only operator credentials may publish; an
    agent-less call on the runners' subject is refused by the gateway."""
    router = await stack.session("router")  # a pipeline run without an agent, as the router records it
    run = await dispatched(router.nc, SUBJECTS, pipeline="no-agent", source_app=ECHO)
    await router.nc.close()
    runner = await stack.session("runner")
    try:
        envelope = ToolCallEnvelope(
            header=Header(method=METHOD_CALL, message_id=str(uuid.uuid4()), timestamp=now_iso(),
                          source=Source(app="aurora.runner")),
            payload=ToolCallRequest(tool=f"{ECHO}.counter_increment", arguments={"key": "forged"},
                                    context=ToolCallContext(**run_context(run))),  # no agent, no approval
        )
        reply = await runner.nc.request(SUBJECTS.tool_call, msgspec.json.encode(envelope), timeout=10)
        result = decode_result(reply.data).payload
        assert result.status == "denied", f"a write ran without an agent or an approval: {result.status}"
        assert result.error is not None and result.error.code == "operator_only"
        await runner.nc.publish(SUBJECTS.operator_tool_call, msgspec.json.encode(envelope))
        await runner.refused(SUBJECTS.operator_tool_call, action="publish")
    finally:
        await runner.nc.close()


def test_every_process_answers_discovery_once_within_its_permissions(stack: SecureStack) -> None:
    """`aurora health` as the operator shows one micro service per process, the scheduler's and
    the router's (with its Binding, Pipeline and Agent areas) included, and nats-server refused
    none of their answers. A process that ran a micro service per admin area answered each
    `$SRV.STATS` once per area, and `allow_responses` refused all but at most one of them."""
    done = subprocess.run([str(AURORA), "health", "--json"], env=stack.env("operator"), cwd=REPO,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode in (0, 1), done.stderr
    services = {row["name"]: row["instances"] for row in json.loads(done.stdout)["services"]}
    expected = {"aurora-event-bridge", "aurora-app-supervisor", "aurora-mcp-gateway", "aurora-router",
                "aurora-runner", "aurora-mcp-edge", "aurora-scheduler"}
    assert set(SERVICES) == {"event_bridge", "app_supervisor", "mcp_gateway", "router", "runner", "mcp_edge",
                            "scheduler"}  # every process of the stack is expected below
    assert services == dict.fromkeys(expected, 1), services
    assert not [line for line in stack.nats.violations() if "_INBOX_operator" in line]
