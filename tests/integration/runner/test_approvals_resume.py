"""Approvals across time, with real processes: a write waits for approval, every runner process
is restarted while it waits, `aurora approvals grant` (the CLI) resumes it and the write runs
exactly once; a second grant and a grant used for other arguments are refused; a denied and an
expired approval cancel their tasks, saying by whom (or that nobody decided) and when, and the
user is told that nothing was done, in the agent's language.

Its own stack (it restarts the runners, and its gateway lets approvals expire after a few
seconds): nats-server, bridge, supervisor, gateway, router and two runners."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from services.runner.tasks.resumer import DURABLE as RESUME
from shared.contracts.subjects import Subjects
from tests.harness.cli import aurora_command as cli
from tests.harness.runner_stack import runner_stack
from tests.harness.runs import (
    ECHO,
    apply,
    bind,
    event,
    handled,
    publish_events,
    settled,
    task_id_of,
)
from tests.harness.stack import Stack
from tests.harness.tool_calls import crafted_call, echo_counter

# Seconds an approval waits for a decision in this stack: long enough for both runners to
# restart and the CLI to grant on a loaded machine (12 s was not), short for the expiry test.
TTL = 20.0
FINAL = ("succeeded", "failed", "unverified", "partial", "cancelled")


@pytest.fixture(scope="module")
def own_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("approvals-stack")
    builder = runner_stack(folder, runners=2, env={"AURORA_APPROVAL_TTL_SECONDS": str(TTL),
                                                   "AURORA_APPROVAL_SWEEP_SECONDS": "0.5"})
    with builder.running() as running:
        yield running


@pytest.fixture
async def onc(own_stack: Stack) -> AsyncIterator[NATS]:
    async with own_stack.client() as client:
        yield client


async def waiting_write(nc: NATS, subjects: Subjects, case: str, locale: str = "zh-CN") -> tuple[str, dict[str, Any]]:
    """A playbook that reads, then increments the echo counter `case` (a write): its task waits."""
    await apply(nc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["message.received"], "locale": locale,
        "tools": [f"{ECHO}.echo", f"{ECHO}.counter_increment"],
        "playbook": {"steps": [
            {"id": "look", "tool": f"{ECHO}.echo", "arguments": {"key": case}},
            {"id": "count", "tool": f"{ECHO}.counter_increment",
             "arguments": {"key": "{{ steps.look.structured.key }}"}},
        ], "answer": "counted: {{ steps.count.structured.count }}"}})
    await bind(nc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "count"}, session_id=f"s-{case}")
    await publish_events(nc.jetstream(), subjects, [doc])
    task_id = task_id_of(doc, f"b-{case}")
    waiting = await settled(nc, subjects, task_id, timeout=40)
    assert waiting["state"] == "awaiting_approval" and waiting["approval_id"], json.dumps(waiting)[:3000]
    return task_id, waiting


async def restart_runners(stack: Stack) -> None:
    runners = stack.of("runner")
    # together, as an operator's rollout of every runner would: 0 is a drained stop on SIGTERM
    # (a runner killed after the timeout says -9)
    codes = await asyncio.gather(*(asyncio.to_thread(runner.terminate, 20) for runner in runners))
    for runner, code in zip(runners, codes, strict=True):
        assert code == 0, runner.logs()[-3000:]
    await asyncio.gather(*(runner.start().ready() for runner in runners))


async def test_a_grant_after_every_runner_restarted_resumes_the_task_and_the_write_runs_once(
        own_stack: Stack, onc: NATS, subjects: Subjects) -> None:
    case = f"ap-{uuid.uuid4().hex[:6]}"
    task_id, waiting = await waiting_write(onc, subjects, case)
    approval_id = waiting["approval_id"]
    await restart_runners(own_stack)  # nothing waits in memory: the task and the approval are in KV

    granted = await asyncio.to_thread(cli, own_stack.url, "approvals", "grant", approval_id, "--note", "ok by me")
    assert granted.returncode == 0, granted.stderr + granted.stdout
    done = await settled(onc, subjects, task_id, timeout=40, states=FINAL)
    assert done["state"] == "succeeded" and done["answer"] == "counted: 1", json.dumps(done, indent=1)[:3000]
    assert await echo_counter(onc, subjects, case) == 1
    count = next(s for s in done["steps"] if s["id"] == "count")
    assert count["classification"] == "ok" and count["approval_id"] == approval_id
    look_before = next(s for s in waiting["steps"] if s["id"] == "look")
    assert next(s for s in done["steps"] if s["id"] == "look")["finished_at"] == look_before["finished_at"]
    decided = [t for t in done["transitions"] if f"approval {approval_id} granted by" in (t["reason"] or "")]
    assert decided and " at " in decided[0]["reason"] and "ok by me" in decided[0]["reason"], done["transitions"]
    assert decided[0]["by"] == decided[0]["reason"].split("granted by ")[1].split(" at ")[0]

    # a second grant is refused, and changes nothing
    again = await asyncio.to_thread(cli, own_stack.url, "approvals", "grant", approval_id)
    assert again.returncode != 0 and "consumed" in (again.stdout + again.stderr), again.stdout + again.stderr
    # the approval used for other arguments (a crafted call) is refused by the gateway
    other = await crafted_call(onc, subjects, agent=f"a-{case}", tool=f"{ECHO}.counter_increment",
                               arguments={"key": f"{case}-other"}, task_id=task_id, approval_id=approval_id)
    assert other.status == "denied" and other.error.code == "approval_mismatch", other
    same = await crafted_call(onc, subjects, agent=f"a-{case}", tool=f"{ECHO}.counter_increment",
                              arguments={"key": case}, task_id=task_id, approval_id=approval_id)
    assert same.status == "denied" and same.error.code == "approval_used", same
    # the grant sent again by the refused second grant has reached the runners and changed nothing
    await handled(onc, subjects, RESUME)
    after = await settled(onc, subjects, task_id, states=FINAL)
    assert after["state"] == "succeeded" and len(after["transitions"]) == len(done["transitions"])
    assert await echo_counter(onc, subjects, case) == 1


async def test_a_denied_and_an_expired_approval_cancel_their_tasks(
        own_stack: Stack, onc: NATS, subjects: Subjects) -> None:
    denied_case, expired_case = f"dn-{uuid.uuid4().hex[:6]}", f"ex-{uuid.uuid4().hex[:6]}"
    (denied_id, denied_wait), (expired_id, _) = await asyncio.gather(
        waiting_write(onc, subjects, denied_case), waiting_write(onc, subjects, expired_case, "en"))

    refused = await asyncio.to_thread(cli, own_stack.url, "approvals", "deny", denied_wait["approval_id"],
                                      "--note", "not on a Friday")
    assert refused.returncode == 0, refused.stderr + refused.stdout
    denied = await settled(onc, subjects, denied_id, states=FINAL)
    assert denied["state"] == "cancelled", json.dumps(denied)[:2000]
    assert denied["error"]["code"] == "approval_denied"
    reason = denied["transitions"][-1]["reason"]
    assert "denied by" in reason and "not on a Friday" in reason and " at " in reason
    assert told(denied) == "未执行：此请求所需的审批被拒绝，因此没有做任何更改。"

    expired = await settled(onc, subjects, expired_id, timeout=TTL + 20, states=FINAL)
    assert expired["state"] == "cancelled", json.dumps(expired)[:2000]
    assert expired["error"]["code"] == "approval_expired" and "expired" in expired["transitions"][-1]["reason"]
    assert told(expired) == "Not done: nobody approved this request in time, so nothing was changed."
    late = await asyncio.to_thread(cli, own_stack.url, "approvals", "grant", expired["approval_id"])
    assert late.returncode != 0
    for case in (denied_case, expired_case):
        assert await echo_counter(onc, subjects, case) == 0


def told(task: dict[str, Any]) -> str:
    """What the conversation was told of how the task ended: its reply, sent and acknowledged by
    the chat app before the task moved."""
    notice = next(s for s in task["steps"] if s["id"] == "deliver")
    assert notice["classification"] == "ok" and task["delivered"] is True, json.dumps(task)[:3000]
    return str(notice["arguments"]["text"])
