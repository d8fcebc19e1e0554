"""A platform `task.*`/`tool.*` event that no binding took stores no route trace; `trace` computes
it when asked, from the bindings saved then, and says so; `replay` takes it as unrouted."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from aurora_cli.commands.route import TRACE_TIMEOUT
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import AdminRequestError, admin_request
from tests.integration.router.helpers import (
    apply,
    consumer_done,
    poll,
    publish_events,
    router_current,
    run_count,
    running_router,
    stream_count,
)
from tests.unit.router.factories import event_doc


async def trace(nc: NATS, subjects: Subjects, message_id: str) -> dict[str, Any]:
    """As `aurora route trace` asks: with its time to read the events stream back."""
    result: dict[str, Any] = await admin_request(nc, subjects, "router", "trace", {"message_id": message_id},
                                                 timeout=TRACE_TIMEOUT)
    return result


async def test_unrouted_platform_events_store_no_trace_and_are_explained_when_asked(
        nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    routes = f"KV_{subjects.stream('ROUTES')}"
    task_event = event_doc("task.succeeded", app="aurora.runner", message_id="task-t1-3", data={"task_id": "t1"})
    tool_event = event_doc("tool.succeeded", app="test.echo", message_id=str(uuid.uuid4()))
    app_event = event_doc("tools.list_changed")  # an app's event that found no route: traced as ever
    async with running_router(nc, subjects):
        await apply(nc, subjects, "agents", {"id": "chat", "agent_kind": "llm", "events": ["*"]})
        await apply(nc, subjects, "bindings", {"id": "chat", "event_pattern": "message.*",
                                               "target_type": "agent", "target_id": "chat"})
        await router_current(nc, subjects)
        await publish_events(js, subjects, [task_event, tool_event, app_event])
        await poll(lambda: consumer_done(js, subjects), what="the three events routed and acked")
        # Acked only once what they store is stored: the app event's trace, nothing for the other two.
        assert await stream_count(js, routes) == 1
        assert (await trace(nc, subjects, app_event["header"]["message_id"])).get("computed", False) is False

        for doc in (task_event, tool_event):
            found = await trace(nc, subjects, doc["header"]["message_id"])
            assert found["status"] == "route_not_found" and found["computed"] is True, found
            assert found["reason"].startswith("not stored"), found
            assert found["event_type"] == doc["payload"]["type"]
            assert found["source_app"] == doc["header"]["source"]["app"]

        # A binding applied since: the computed trace says what would happen now; nothing is dispatched.
        await apply(nc, subjects, "bindings", {"id": "tasks", "event_pattern": "task.succeeded",
                                               "target_type": "agent", "target_id": "chat"})
        now = await trace(nc, subjects, task_event["header"]["message_id"])
        assert (now["status"], now["binding_id"], now["computed"]) == ("dispatched", "tasks", True), now
        assert now["run_id"] is None
        assert await run_count(js, subjects) == 0

        with pytest.raises(AdminRequestError, match="no route trace"):
            await trace(nc, subjects, "task-nobody-1")

        # Replayable as an event with a stored route_not_found trace is: by id, and by time.
        await apply(nc, subjects, "bindings", {"id": "tools", "event_pattern": "tool.succeeded",
                                               "target_type": "agent", "target_id": "chat"})
        by_id = await admin_request(nc, subjects, "router", "replay",
                                    {"message_ids": [task_event["header"]["message_id"]]})
        assert [r["outcome"] for r in by_id["results"]] == ["dispatched"], by_id
        since = await admin_request(nc, subjects, "router", "replay", {"since": "2000-01-01T00:00:00Z"})
        outcomes = {r["message_id"]: r["outcome"] for r in since["results"]}
        assert outcomes[tool_event["header"]["message_id"]] == "dispatched", since
        assert outcomes[task_event["header"]["message_id"]] == "already_dispatched", since
        assert await run_count(js, subjects) == 2
        stored = await trace(nc, subjects, task_event["header"]["message_id"])
        assert (stored["status"], stored["replayed"], stored.get("computed", False)) == ("dispatched", True, False)


async def test_an_older_untraced_event_is_found_past_the_first_windows_read(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    target = event_doc("task.failed", app="aurora.runner", message_id="task-old-2")
    later = [event_doc("task.running", app="aurora.runner", message_id=f"task-n{i}-1") for i in range(8_600)]
    async with running_router(nc, subjects):
        await publish_events(js, subjects, [target, *later])  # more than one round of windows after it
        # Asked once the router has taken them all, as an operator would: under a loaded suite,
        # 8,600 reads raced by 8,600 routings took over the 5 s an admin request waits by default.
        await poll(lambda: consumer_done(js, subjects), timeout=60, what="the 8,601 events routed and acked")
        found = await trace(nc, subjects, "task-old-2")
        assert (found["status"], found["computed"], found["event_type"]) == ("route_not_found", True, "task.failed")
        assert found["event_seq"] == 1
