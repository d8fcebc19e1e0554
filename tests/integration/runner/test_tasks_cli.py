"""`aurora tasks list|show|cancel` as a user runs them, against the running stack."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.cli import aurora_command as cli
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import (
    ECHO,
    apply,
    bind,
    event,
    poll,
    publish_events,
    settled,
    task,
    task_id_of,
)

AURORA = Path(sys.executable).parent / "aurora"


async def test_list_and_show_a_finished_task(stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"cli-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"], "tools": [f"{ECHO}.echo"],
        "playbook": {"steps": [{"id": "echo", "tool": f"{ECHO}.echo",
                                "arguments": {"order_id": "{{ event.data.order }}", "count": "{{ event.data.n }}"}}],
                     "answer": "order {{ steps.echo.structured.order_id }} x{{ steps.echo.structured.count }}"}})
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "order": "SO-42", "n": 3, "text": "?"}, session_id=f"g-{case}")
    await publish_events(snc.jetstream(), subjects, [doc])
    task_id = task_id_of(doc, f"b-{case}")
    await settled(snc, subjects, task_id)

    listed = cli(stack.url, "tasks", "list", "--state", "succeeded", "--agent", f"a-{case}", "--json")
    assert listed.returncode == 0, listed.stderr
    items = json.loads(listed.stdout)["items"]
    assert [t["id"] for t in items] == [task_id] and items[0]["delivered"] is True

    shown = cli(stack.url, "tasks", "show", task_id, "--json")
    assert shown.returncode == 0, shown.stderr
    detail = json.loads(shown.stdout)
    echo = next(s for s in detail["steps"] if s["id"] == "echo")
    assert echo["arguments"] == {"order_id": "SO-42", "count": 3}  # the integer stayed an integer
    assert echo["business_ids"] == {"order_id": "SO-42"}
    assert detail["answer"] == "order SO-42 x3"

    human = cli(stack.url, "tasks", "show", task_id)
    assert human.returncode == 0, human.stderr
    assert "state: succeeded" in human.stdout and "SO-42" in human.stdout and "deliver" in human.stdout

    bad = cli(stack.url, "tasks", "list", "--state", "sleeping")
    assert bad.returncode == 2 and "unknown state" in bad.stderr
    missing = cli(stack.url, "tasks", "show", "no-such-task")
    assert missing.returncode == 1 and "no task" in missing.stderr


async def test_cancel_a_running_task_stops_it_at_its_next_step(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"cnl-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"],
        "tools": [f"{ECHO}.slow", f"{ECHO}.echo"],
        # Long enough that the CLI (a fresh Python process, slow to start on a loaded machine)
        # asks while the step still runs.
        "playbook": {"steps": [{"id": "wait", "tool": f"{ECHO}.slow", "arguments": {"seconds": 8}},
                               {"id": "after", "tool": f"{ECHO}.echo", "arguments": {"value": 1}}],
                     "answer": "done"}})
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "slow please"}, session_id=f"g-{case}")
    await publish_events(snc.jetstream(), subjects, [doc])
    task_id = task_id_of(doc, f"b-{case}")
    await poll(lambda: _running(snc, subjects, task_id), what="the task to run")
    cancelled = cli(stack.url, "tasks", "cancel", task_id, "--by", "alice", "--json")
    assert cancelled.returncode == 0, cancelled.stderr
    assert json.loads(cancelled.stdout)["result"] == "cancel_requested"
    final = await settled(snc, subjects, task_id)
    assert final["state"] == "cancelled", json.dumps(final, indent=1)[:3000]
    assert final["cancel_requested"] == "alice"
    assert not [s for s in final["steps"] if s["id"] == "after"]
    again = cli(stack.url, "tasks", "cancel", task_id, "--json")
    assert json.loads(again.stdout)["result"] == "already_terminal"


async def test_cancel_a_task_that_waits_for_approval(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"cwa-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"],
        "tools": [f"{ECHO}.counter_increment"],
        "playbook": {"steps": [{"id": "count", "tool": f"{ECHO}.counter_increment", "arguments": {"key": case}}]}})
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "count"}, session_id=f"g-{case}")
    await publish_events(snc.jetstream(), subjects, [doc])
    task_id = task_id_of(doc, f"b-{case}")
    assert (await settled(snc, subjects, task_id))["state"] == "awaiting_approval"
    result = cli(stack.url, "tasks", "cancel", task_id, "--reason", "not needed", "--json")
    assert json.loads(result.stdout) == {"id": task_id, "state": "cancelled", "result": "cancelled"}
    final = await task(snc, subjects, task_id)
    assert final is not None and final["transitions"][-1]["reason"] == "not needed"


async def _running(nc: NATS, subjects: Subjects, task_id: str) -> bool:
    found = await task(nc, subjects, task_id)
    return found is not None and found["state"] == "running"
