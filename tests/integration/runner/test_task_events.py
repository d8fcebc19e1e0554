"""Every state change of a task is an AMP event (`task.*`), through the event-bridge."""

from __future__ import annotations

import uuid
from typing import Any

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import (
    ECHO,
    apply,
    bind,
    event,
    poll,
    publish_events,
    settled,
    stored_events,
    task_id_of,
)


async def _task_events(nc: NATS, subjects: Subjects, task_id: str) -> list[dict[str, Any]]:
    found = await stored_events(nc, f"{subjects.prefix}.evt.aurora_runner.task.>",
                                lambda doc: doc["payload"]["subject"]["id"] == task_id)
    return sorted(found, key=lambda d: int(d["header"]["message_id"].rsplit("-", 1)[1]))  # by transition


async def test_task_state_changes_become_task_events(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    case = f"evt-{uuid.uuid4().hex[:6]}"
    await apply(snc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["*"], "tools": [f"{ECHO}.echo"],
        "playbook": {"steps": [{"id": "echo", "tool": f"{ECHO}.echo", "arguments": {"v": 1}}], "answer": "ok"}})
    await bind(snc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "hi"}, session_id=f"g-{case}")
    await publish_events(snc.jetstream(), subjects, [doc])
    task_id = task_id_of(doc, f"b-{case}")
    await settled(snc, subjects, task_id)

    async def both() -> list[dict[str, Any]] | None:
        found = await _task_events(snc, subjects, task_id)
        return found if len(found) >= 2 else None

    found = await poll(both, what="task.running and task.succeeded events")
    assert [d["payload"]["type"] for d in found] == ["task.running", "task.succeeded"]
    last = found[-1]
    assert last["header"]["source"]["app"] == "aurora.runner"
    assert last["payload"]["session_id"] == f"g-{case}"
    assert last["payload"]["data"]["task_id"] == task_id and last["payload"]["data"]["delivered"] is True
    assert last["payload"]["data"]["target"] == {"type": "agent", "id": f"a-{case}"}
