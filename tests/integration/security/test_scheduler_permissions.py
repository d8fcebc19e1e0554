"""The scheduler's NATS user: the real scheduler and bridge processes, each as its own user, turn
a schedule into events with nothing refused; the scheduler may not publish events, runs, other
services' signals or ticks, nor touch other buckets; nobody else may arm a timer, fire a tick,
write the schedules bucket or speak as `aurora.scheduler`."""

from __future__ import annotations

import json
from pathlib import Path

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.secure_nats import Connect, SecureNats
from tests.harness.stack import StackBuilder
from tests.harness.waiting import NOT_SERVING_YET, poll
from tests.integration.scheduler.schedules import EVENTS_SUBJECT, FAST

SUBJECTS = Subjects("amp")


async def test_the_scheduler_does_its_job_as_its_own_user(secure: SecureNats, connect: Connect,
                                                          tmp_path: Path) -> None:
    builder = StackBuilder(tmp_path).broker(secure.url, secure.credentials).bridge().scheduler(**FAST)
    with builder.running():
        operator = await connect("operator")

        async def applied() -> dict[str, object] | None:
            try:
                return await admin_request(operator.nc, SUBJECTS, "schedules", "apply", {"document": {
                    "kind": "Schedule", "id": "secure", "every": "1s", "data": {"k": 1}}}, timeout=10)
            except NOT_SERVING_YET:
                return None

        await poll(applied, timeout=30, what="the schedule applied")
        sub = await operator.nc.jetstream().subscribe(EVENTS_SUBJECT, ordered_consumer=True)
        first = json.loads((await sub.next_msg(timeout=20)).data)
        second = json.loads((await sub.next_msg(timeout=10)).data)
        await sub.unsubscribe()
        assert first["payload"]["actor"] == {"id": "aurora.scheduler", "kind": "system"}
        assert second["payload"]["data"] == {"k": 1}
        shown = await admin_request(operator.nc, SUBJECTS, "schedules", "show", {"id": "secure"}, timeout=10)
        assert shown["last_tick"] is not None
        paused = await admin_request(operator.nc, SUBJECTS, "schedules", "pause", {"id": "secure"}, timeout=10)
        assert paused["result"] == "paused"
        assert secure.violations() == []  # neither the scheduler nor the bridge was refused anything


async def test_the_scheduler_may_do_nothing_else(connect: Connect) -> None:
    scheduler = await connect("scheduler")
    for subject in (SUBJECTS.event("aurora.scheduler", "schedule.triggered"),
                    SUBJECTS.signal("aurora.gateway", "platform_event"),
                    SUBJECTS.signal("aurora.runner", "platform_event"),
                    SUBJECTS.signal("im.polaris.qq", "native_event"),
                    SUBJECTS.run("agent", "someone"), SUBJECTS.tool_call, SUBJECTS.schedule_tick("forged"),
                    "$KV.AMP_BINDINGS.b1", "$KV.AMP_AGENTS.a1", "$KV.AMP_TASKS.t1",
                    "$JS.API.STREAM.PURGE.AMP_SCHEDULE_TIMERS", "$JS.API.STREAM.DELETE.AMP_EVENTS"):
        await scheduler.nc.publish(subject, b"{}")
        await scheduler.refused(subject)
    for subject in ("amp.admin.bindings.apply", "amp.mcp.>", SUBJECTS.events_all):
        await scheduler.nc.subscribe(subject)
        await scheduler.refused(subject, action="subscription")


async def test_nobody_else_arms_timers_fires_ticks_or_speaks_for_the_scheduler(connect: Connect) -> None:
    for user in ("event-bridge", "app-supervisor", "mcp-gateway", "router", "runner", "operator", "consumer"):
        session = await connect(user)
        for subject in (SUBJECTS.schedule_timer("forged"), SUBJECTS.schedule_tick("forged"),
                        SUBJECTS.signal("aurora.scheduler", "platform_event"), "$KV.AMP_SCHEDULES.forged"):
            await session.nc.publish(subject, b"{}")
            await session.refused(subject)
        await session.nc.subscribe("amp.admin.schedules.apply")
        if user != "operator":  # the operator sends requests there; it never serves them either
            await session.refused("amp.admin.schedules.apply", action="subscription")
