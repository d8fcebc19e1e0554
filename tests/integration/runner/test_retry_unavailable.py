"""A gateway that is not there is waited for: a run whose reply finds no gateway waits, durably,
and tries again until the gateway is back (every reply delivered exactly once, nothing
`partial`), also across a SIGKILLed runner; only when the agent's deadline passes does the
task end, with the reason. Its own stack (one runner): these tests stop the gateway."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from typing import Any

import msgspec
import nats
import pytest
from nats.aio.client import Client as NATS
from nats.js.errors import KeyNotFoundError

from services.runner.config import RunnerConfig
from shared.contracts.subjects import Subjects
from shared.contracts.task import decode_task
from shared.jetstream.streams import tasks_bucket
from tests.fakes.openai_server import FakeOpenAI
from tests.harness.cli import aurora_command as cli
from tests.harness.run_records import runs_stream_name
from tests.harness.runner_stack import RunnerStack as GatewayStack
from tests.harness.runner_stack import chat_log_of, runner_stack
from tests.harness.runs import (
    apply,
    bind,
    event,
    poll,
    publish_events,
    sent,
    task_id_of,
)
from tests.harness.waiting import consumed

TERMINAL = ("succeeded", "failed", "unverified", "partial", "cancelled")


@pytest.fixture(scope="module")
def gateway_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GatewayStack]:
    folder = tmp_path_factory.mktemp("retry-stack")
    with runner_stack(folder, runners=1).running() as running:
        yield GatewayStack(running, chat_log_of(folder))


@pytest.fixture
async def gnc(gateway_stack: GatewayStack) -> AsyncIterator[NATS]:
    client = await nats.connect(gateway_stack.url)
    try:
        yield client
    finally:
        await client.close()
        if not gateway_stack.processes["gateway"].alive():  # the next test starts with a gateway
            await start_gateway(gateway_stack)


async def start_gateway(stack: GatewayStack) -> None:
    """Start the stopped gateway and wait until it serves."""
    await stack.processes["gateway"].start().ready()


async def stored(nc: NATS, subjects: Subjects, task_id: str) -> dict[str, Any] | None:
    """The task as the tasks bucket holds it (read directly: no runner needs to be up)."""
    kv = await nc.jetstream().key_value(tasks_bucket(subjects).name)
    try:
        entry = await kv.get(task_id)
    except KeyNotFoundError:
        return None
    return msgspec.to_builtins(decode_task(entry.value)) if entry.value else None


async def all_in(nc: NATS, subjects: Subjects, ids: list[str], holds: Any, *, timeout: float,
                 what: str) -> dict[str, dict[str, Any]]:
    last: dict[str, dict[str, Any]] = {}

    async def check() -> dict[str, dict[str, Any]] | None:
        for task_id in ids:
            found = await stored(nc, subjects, task_id)
            if found is not None:
                last[task_id] = found
        return dict(last) if len(last) == len(ids) and all(holds(t) for t in last.values()) else None

    try:
        return await poll(check, timeout=timeout, what=what, interval=0.2)
    except AssertionError as exc:
        raise AssertionError(f"{exc}: {json.dumps(list(last.values()))[:4000]}") from None


def waited(task: dict[str, Any], tries: int = 1, step: str = "deliver") -> bool:
    """The task found no gateway for `step` at least `tries` times (and waits to try again)."""
    wait = task.get("retry")
    return bool(wait) and wait["step"] == step and wait["code"] == "no_gateway" and wait["tries"] >= tries


def echo_agent(agent_id: str, **extra: Any) -> dict[str, Any]:
    """No step but the reply: the delivery is the run's first call through the gateway."""
    return {"kind": "Agent", "id": agent_id, "agent_kind": "playbook", "events": ["*"],
            "playbook": {"steps": [], "answer": "got {{ event.data.n }}"}, **extra}


async def start_runs(nc: NATS, subjects: Subjects, stack: GatewayStack, case: str, count: int,
                     agent: dict[str, Any] | None = None, **fields: Any) -> tuple[list[str], list[str]]:
    """Apply the agent (the gateway answers that), stop the gateway, publish `count` events each
    in its own conversation: (task ids, sessions)."""
    await apply(nc, subjects, "agents", agent or echo_agent(f"a-{case}", **fields))
    await bind(nc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    stack.processes["gateway"].terminate(timeout=20)
    sessions = [f"g-{case}-{n}" for n in range(count)]
    docs = [event("message.received", {"n": n, "case": case, "text": "hi"}, session_id=session)
            for n, session in enumerate(sessions)]
    await publish_events(nc.jetstream(), subjects, docs)
    return [task_id_of(doc, f"b-{case}") for doc in docs], sessions


def replies(stack: GatewayStack, session: str) -> list[str]:
    return [r["text"] for r in sent(stack.chat_log) if r.get("session_id") == session]


async def test_replies_wait_for_a_stopped_gateway_and_each_is_delivered_once(
        gateway_stack: GatewayStack, gnc: NATS, subjects: Subjects) -> None:
    case = f"gw-{uuid.uuid4().hex[:6]}"
    ids, sessions = await start_runs(gnc, subjects, gateway_stack, case, 6)
    await all_in(gnc, subjects, ids, lambda t: waited(t, 2) and t["state"] in ("queued", "running"),
                 timeout=60, what="every run waiting for the gateway")

    async def shows_waiting() -> str | None:  # a task is `running` only for a moment between waits
        out = cli(gateway_stack.url, "tasks", "show", ids[0])
        return out.stdout if "waiting: step deliver: no_gateway" in out.stdout else None

    shown = await poll(shows_waiting, timeout=20, what="aurora tasks show saying what the task waits for")
    assert "next try at" in shown and "state: queued" in shown, shown

    gateway_stack.processes["gateway"].start()
    finals = await all_in(gnc, subjects, ids, lambda t: t["state"] in TERMINAL, timeout=90,
                          what="every run settled after the gateway came back")
    await consumed(gnc.jetstream(), runs_stream_name(subjects), RunnerConfig().durable, timeout=30)
    for task_id, session in zip(ids, sessions, strict=True):
        final = finals[task_id]
        assert final["state"] == "succeeded" and final["delivered"] is True, json.dumps(final, indent=1)[:4000]
        assert replies(gateway_stack, session) == [f"got {session.rsplit('-', 1)[1]}"]
        reasons = [t.get("reason") or "" for t in final["transitions"] if t["to"] == "queued"]
        assert any(r.startswith("waiting to retry step deliver (no_gateway") for r in reasons), reasons


async def test_a_wait_survives_a_sigkilled_runner(gateway_stack: GatewayStack, gnc: NATS, subjects: Subjects) -> None:
    case = f"gwk-{uuid.uuid4().hex[:6]}"
    ids, sessions = await start_runs(gnc, subjects, gateway_stack, case, 4)
    await all_in(gnc, subjects, ids, waited, timeout=60, what="every run waiting for the gateway")
    old = gateway_stack.processes["runner-1"]
    old.kill()  # mid-wait: nothing of the wait is in its memory
    await start_gateway(gateway_stack)
    # the killed one's settings, under a name of its own (stopped with the stack)
    gateway_stack.running.launch("runner", "runner-after-kill",
                                 **{**old.env, "AURORA_RUNNER_INSTANCE": "runner-after-kill"})
    finals = await all_in(gnc, subjects, ids, lambda t: t["state"] in TERMINAL, timeout=90,
                          what="every run settled by the runner started after the kill")
    await consumed(gnc.jetstream(), runs_stream_name(subjects), RunnerConfig().durable, timeout=30)
    for task_id, session in zip(ids, sessions, strict=True):
        final = finals[task_id]
        assert final["state"] == "succeeded", json.dumps(final, indent=1)[:4000]
        assert final["runner"] == "runner-after-kill" and final["delivered"] is True
        assert len(replies(gateway_stack, session)) == 1


async def test_a_deadline_passing_while_the_gateway_stays_down_ends_the_task_once_with_the_reason(
        gateway_stack: GatewayStack, gnc: NATS, subjects: Subjects) -> None:
    case = f"gwd-{uuid.uuid4().hex[:6]}"
    ids, sessions = await start_runs(gnc, subjects, gateway_stack, case, 1, retry_unavailable_seconds=3)
    finals = await all_in(gnc, subjects, ids, lambda t: t["state"] in TERMINAL, timeout=60,
                          what="the run ending at its deadline")
    await consumed(gnc.jetstream(), runs_stream_name(subjects), RunnerConfig().durable, timeout=30)
    final = finals[ids[0]]
    assert final["state"] == "failed", json.dumps(final, indent=1)[:4000]
    assert final["error"]["code"] == "no_gateway" and "deadline passed" in final["error"]["message"]
    assert final["retry"]["tries"] >= 2 and final["delivered"] is False
    assert [t["to"] for t in final["transitions"]].count("failed") == 1
    ended = datetime.fromisoformat(final["transitions"][-1]["at"])
    assert (ended - datetime.fromisoformat(final["retry"]["since"])).total_seconds() >= 2.9  # not before it
    assert replies(gateway_stack, sessions[0]) == []
    again = await stored(gnc, subjects, ids[0])  # the run was acked: nothing comes back to it
    assert again is not None and again["transitions"] == final["transitions"]


async def test_an_llm_agent_waits_for_the_gateway_to_list_its_tools(
        gateway_stack: GatewayStack, gnc: NATS, subjects: Subjects) -> None:
    case = f"gwl-{uuid.uuid4().hex[:6]}"
    fake = FakeOpenAI().start()
    try:
        fake.script(case, lambda chat: chat.answer("listed and answered"))
        agent = {"kind": "Agent", "id": f"a-{case}", "agent_kind": "llm", "events": ["*"],
                 "model": {"base_url": fake.base_url, "model": case}}
        ids, sessions = await start_runs(gnc, subjects, gateway_stack, case, 1, agent)
        await all_in(gnc, subjects, ids, lambda t: waited(t, 2, step="tools"), timeout=60,
                     what="the run waiting for the gateway to list the agent's tools")
        gateway_stack.processes["gateway"].start()
        finals = await all_in(gnc, subjects, ids, lambda t: t["state"] in TERMINAL, timeout=90,
                              what="the run settled after the gateway came back")
    finally:
        fake.stop()
    final = finals[ids[0]]
    assert final["state"] == "succeeded" and final["answer"] == "listed and answered", json.dumps(final)[:4000]
    assert replies(gateway_stack, sessions[0]) == ["listed and answered"]


async def test_a_question_to_the_user_waits_for_the_gateway_then_is_asked_once(
        gateway_stack: GatewayStack, gnc: NATS, subjects: Subjects) -> None:
    case = f"gwq-{uuid.uuid4().hex[:6]}"
    agent = {"kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"],
             "playbook": {"steps": [{"id": "pick", "kind": "interaction", "question": "Which pump?",
                                     "options": ["P-1", "P-2"]}], "answer": "you chose {{ steps.pick.text }}"}}
    ids, sessions = await start_runs(gnc, subjects, gateway_stack, case, 1, agent)
    await all_in(gnc, subjects, ids, lambda t: waited(t, 2, step="pick.ask"), timeout=60,
                 what="the question waiting for the gateway")
    gateway_stack.processes["gateway"].start()
    finals = await all_in(gnc, subjects, ids, lambda t: t["state"] == "awaiting_approval", timeout=90,
                          what="the question asked and the task waiting for the answer")
    assert finals[ids[0]]["interaction_id"], json.dumps(finals[ids[0]])[:3000]
    asked = replies(gateway_stack, sessions[0])
    assert len(asked) == 1 and "Which pump?" in asked[0], asked
