"""10,000 events through three router processes, one SIGKILLed half-way: exactly 10,000 runs,
no duplicate run id, a trace for every event (in its run record)."""

from __future__ import annotations

import asyncio
import os
import random
import signal
import time
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS

from shared.contracts.run import run_id_for
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.stack import StackBuilder
from tests.integration.router.helpers import apply, drain_runs, poll, publish_events, run_count, stream_count
from tests.unit.router.factories import event_doc

TOTAL = 10_000


def make_events() -> list[dict[str, Any]]:
    rng = random.Random(7)
    docs = []
    for n in range(TOTAL):
        if n % 3 == 0:
            docs.append(event_doc("group.member_joined", message_id=f"join-{n}", conversation=f"g{n % 17}",
                                  subject={"kind": "member", "id": f"u{n}"}))
        else:
            docs.append(event_doc("message.received", message_id=f"msg-{n}", session_id=f"s{n % 23}",
                                  actor={"id": f"u{n % 50}", "kind": "user"},
                                  data={"text": "hello " * rng.randint(1, 20), "vip": n % 5 == 0}))
    return docs


async def test_three_routers_one_killed_exactly_one_run_per_event(nc: NATS, nats_url: str, subjects: Subjects,
                                                                 tmp_path: Path) -> None:
    js = nc.jetstream()
    builder = StackBuilder(tmp_path).broker(nats_url)
    for i in range(3):
        builder.service("router", f"router-{i}", AURORA_ROUTER_INSTANCE=f"r{i}", AURORA_ROUTER_SERVE_AGENTS="1")
    async with builder.up() as stack:
        routers = stack.of("router")
        for area, doc in [
            ("agents", {"id": "greeter", "agent_kind": "playbook", "events": ["group.*"]}),
            ("agents", {"id": "chat", "agent_kind": "llm", "events": ["message.*"]}),
            ("pipelines", {"id": "vip"}),
            ("bindings", {"id": "welcome", "event_pattern": "group.*", "target_type": "agent",
                          "target_id": "greeter"}),
            ("bindings", {"id": "vip", "event_pattern": "message.received", "priority": 5, "target_type": "pipeline",
                          "target_id": "vip", "filters": [{"field": "data.vip", "op": "eq", "value": True}]}),
            ("bindings", {"id": "chat", "event_pattern": "message.*", "target_type": "agent", "target_id": "chat"}),
        ]:
            await apply(nc, subjects, area, doc)

        async def catalogs_loaded() -> bool:  # every router has seen every binding (KV watch)
            seen = set()
            for _ in range(12):
                health = await admin_request(nc, subjects, "router", "health")
                if health["bindings"] == 3 and health["pipelines"] == 1:
                    seen.add(health["instance"])
            return len(seen) == 3

        await poll(catalogs_loaded, what="every router loading the bindings")
        docs = make_events()
        started = time.monotonic()
        publishing = asyncio.create_task(publish_events(js, subjects, docs))

        async def half_way() -> bool:
            return await run_count(js, subjects) >= TOTAL // 2

        await poll(half_way, timeout=60, what="half of the runs")
        # Freeze it first: its outstanding pull still receives events it can no longer ack, so the
        # SIGKILL always leaves work for the others to redeliver, however the machine is loaded.
        os.kill(routers[0].pid, signal.SIGSTOP)
        await asyncio.sleep(1.0)
        routers[0].kill()
        await publishing

        async def all_done() -> bool:
            info = await js.consumer_info(subjects.stream("EVENTS"), "router")
            return info.num_pending == 0 and info.num_ack_pending == 0

        await poll(all_done, timeout=60, what="every event routed and acknowledged")
        elapsed = time.monotonic() - started
        info = await js.consumer_info(subjects.stream("EVENTS"), "router")
        assert info.delivered.consumer_seq > info.delivered.stream_seq == TOTAL, "the kill left work to redeliver"
        assert await run_count(js, subjects) == TOTAL
        # One record per run, each holding its event's trace; no trace of its own.
        assert await stream_count(js, f"KV_{subjects.stream('RUN_RECORDS')}") == TOTAL
        assert await stream_count(js, f"KV_{subjects.stream('ROUTES')}") == 0

        runs = await drain_runs(js, subjects, TOTAL + 1)
        assert len(runs) == TOTAL
        run_ids = [run.payload.run_id for _, run in runs]
        assert len(set(run_ids)) == TOTAL
        by_event = {run.payload.event.header.message_id: run for _, run in runs if run.payload.event}
        assert set(by_event) == {doc["header"]["message_id"] for doc in docs}
        for doc in docs[:: TOTAL // 200]:
            message_id = doc["header"]["message_id"]
            run = by_event[message_id]
            assert run.payload.run_id == run_id_for(message_id, run.payload.binding_id)
            expected = ("greeter" if doc["payload"]["type"].startswith("group.")
                        else "vip" if doc["payload"]["data"]["vip"] else "chat")
            assert run.payload.target.id == expected
            trace = await admin_request(nc, subjects, "router", "trace", {"message_id": message_id})
            assert trace["status"] == "dispatched" and trace["run_id"] == run.payload.run_id
        assert not routers[0].alive() and routers[1].alive() and routers[2].alive()
        print(f"{TOTAL} events routed by 3 routers (one killed) in {elapsed:.1f}s")
