"""`<p>.admin.tasks.*`: list, get and cancel tasks (served by every runner, answered by one).

list:   {"state"?, "agent"?, "limit"? (100)} → {"items": [summaries, newest first], "count": n}
get:    {"id"} → the whole task, step log included
cancel: {"id", "by"?, "reason"?} → {"id", "state", "result": cancelled | cancel_requested |
        already_requested | already_terminal}
"""

from __future__ import annotations

from typing import Any

import msgspec

from services.runner.tasks import statemachine
from services.runner.tasks.store import TaskStore
from shared.contracts.task import TASK_STATES, Task
from shared.nats.admin_service import AdminHandler, AdminRequestError
from shared.people import current_caller


def summary(task: Task) -> dict[str, Any]:
    return {
        "id": task.id,
        "state": task.state,
        "target": {"type": task.target.type, "id": task.target.id},
        "agent": task.agent,
        "event_type": task.event_type,
        "session_id": task.session_id,
        "created_at": task.created_at,
        "updated_at": task.updated_at,
        "attempts": task.attempts,
        "steps": len(task.steps),
        "delivered": task.delivered,
        "error": task.error.code if task.error else None,
        "synthetic": task.synthetic,
        # queued with a retry wait: what it waits for and when it tries again
        "waiting": f"{task.retry.code} (try {task.retry.tries}, next at {task.retry.next_try_at})"
        if task.state == "queued" and task.retry is not None else None,
    }


def _id(body: dict[str, Any]) -> str:
    value = body.get("id")
    if not isinstance(value, str) or not value:
        raise AdminRequestError("invalid_request", "field 'id' is required (a non-empty string)")
    return value


def task_endpoints(store: TaskStore) -> dict[str, AdminHandler]:
    async def list_tasks(body: dict[str, Any]) -> dict[str, Any]:
        state = body.get("state")
        if state is not None and state not in TASK_STATES:
            raise AdminRequestError("invalid_request", f"unknown state {state!r}; known: {', '.join(TASK_STATES)}")
        limit = body.get("limit", 100)
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise AdminRequestError("invalid_request", "limit must be a positive integer")
        agent = body.get("agent")
        tasks = [t for t in await store.all()
                 if (state is None or t.state == state) and (agent is None or t.agent == agent)]
        tasks.sort(key=lambda t: (t.created_at, t.id), reverse=True)
        return {"items": [summary(t) for t in tasks[:limit]], "count": len(tasks)}

    async def get(body: dict[str, Any]) -> dict[str, Any]:
        task_id = _id(body)
        found = await store.get(task_id)
        if found is None:
            raise AdminRequestError("not_found", f"no task {task_id!r}")
        shown: dict[str, Any] = msgspec.to_builtins(found[0])
        shown["revision"] = found[1]
        return shown

    async def cancel(body: dict[str, Any]) -> dict[str, Any]:
        task_id = _id(body)
        by = current_caller().label(body.get("by"))  # a person: who the server authenticated
        reason = body.get("reason") if isinstance(body.get("reason"), str) else None
        outcomes: list[str] = []

        def change(task: Task) -> Task:
            outcome = statemachine.request_cancel(task, by=str(by), now=store.clock(), reason=reason)
            outcomes.append(outcome.result)
            return outcome.task

        task = await store.change(task_id, change)
        if task is None:
            raise AdminRequestError("not_found", f"no task {task_id!r}")
        return {"id": task.id, "state": task.state, "result": outcomes[-1]}

    return {"list": list_tasks, "get": get, "cancel": cancel}
