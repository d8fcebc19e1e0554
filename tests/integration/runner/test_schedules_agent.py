"""A schedule starts a playbook agent end to end: the scheduler process ticks, the bridge makes
`schedule.triggered`, a binding on it (filtered to actor kind `system`) routes it to the agent,
and a runner runs the agent, which sees the schedule's data and the system actor."""

from __future__ import annotations

import uuid

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import ECHO, apply, settled, task_id_of
from tests.integration.scheduler.schedules import FAST, admin, events_until


async def test_a_binding_on_schedule_triggered_runs_a_playbook_agent(stack: RunnerStack, snc: NATS,
                                                                     subjects: Subjects) -> None:
    case = f"sched-{uuid.uuid4().hex[:6]}"
    scheduler = await stack.running.serving("scheduler", **FAST)  # the runner stack's, one more service
    try:
        await apply(snc, subjects, "agents", {
            "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["schedule.*"],
            "tools": [f"{ECHO}.echo"],
            "playbook": {"steps": [{"id": "look", "tool": f"{ECHO}.echo",
                                    "arguments": {"key": "{{ event.data.case }}"}}],
                         "answer": "seen {{ steps.look.structured.key }} from {{ event.actor.id }}"}})
        await apply(snc, subjects, "bindings", {
            "kind": "Binding", "id": f"b-{case}", "event_pattern": "schedule.triggered", "target_type": "agent",
            "target_id": f"a-{case}", "priority": 10,
            "filters": [{"field": "data.case", "op": "eq", "value": case},
                        {"field": "actor.kind", "op": "eq", "value": "system"},
                        {"field": "subject.id", "op": "eq", "value": case}]})
        await admin(snc, subjects, "apply", {"document": {"kind": "Schedule", "id": case, "every": "2s",
                                                          "data": {"case": case}}})
        [first, *_] = await events_until(snc, case, lambda found: len(found) >= 1, what="the schedule's first tick")
        done = await settled(snc, subjects, task_id_of(first, f"b-{case}"), states=("succeeded", "failed"))
        assert done["state"] == "succeeded", done
        assert done["answer"] == f"seen {case} from aurora.scheduler", done
    finally:
        await admin(snc, subjects, "pause", {"id": case})
        scheduler.terminate()
