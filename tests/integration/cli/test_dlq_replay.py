"""`aurora dlq replay` of an event the router gave up on, once the cause is fixed, makes exactly
one run; replaying it again makes none.

The event's run could not be stored (its run records bucket is gone: a migration, an operator's mistake), so
the router retried it and, after `max_deliver` deliveries, dead-lettered it. The router process
would take minutes to give up (`max_deliver` 10, backoff up to a minute), so the real `Router`
gives up here in the test's process with `max_deliver` 2, as test_gave_up.py does for the bridge.
Then a real runner process (which creates the bucket again) and a real router process run, and
the real CLI replays.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import nats
from nats.aio.client import Client as NATS
from nats.js.errors import NotFoundError

from services.router.catalog import RouteCatalog
from services.router.router import Router, RouterConfig
from services.router.stores import open_stores
from shared.contracts.subjects import Subjects
from shared.jetstream import deadletter as dl
from shared.nats.admin_service import admin_request
from tests.harness.cli import Cli
from tests.harness.runs import RUNNER_ENV, event, publish_events, task_id_of
from tests.harness.stack import StackBuilder
from tests.harness.waiting import consumed, poll

AGENT = {"kind": "Agent", "id": "late-agent", "agent_kind": "playbook", "events": ["order.placed"],
         "playbook": {"steps": [], "answer": "order seen"}}
BINDING = {"kind": "Binding", "id": "orders", "event_pattern": "order.placed", "target_type": "agent",
           "target_id": "late-agent", "priority": 10}


async def _give_up_without_runs_stream(nats_url: str, subjects: Subjects, doc: dict[str, Any]) -> None:
    """The real router code, giving up after 2 deliveries because no run can be stored."""
    client = await nats.connect(nats_url)
    try:
        js = client.jetstream()
        stores = await open_stores(js, subjects)
        await js.delete_key_value("AMP_RUN_RECORDS")  # runs are run records (issue 38)
        catalog = RouteCatalog(stores.bindings, stores.agents, stores.pipelines)
        await catalog.start()
        router = Router(client, subjects, catalog, stores, RouterConfig(max_deliver=2, backoff=(1.0,),
                                                                        publish_timeout=3.0))
        await router.start()
        stop = asyncio.Event()
        running = asyncio.create_task(router.run(stop))
        await publish_events(js, subjects, [doc])

        async def dead_lettered() -> int:
            return router.stats.dead_lettered

        await poll(dead_lettered, timeout=30, what="the router to give up on the event")
        stop.set()
        await asyncio.wait_for(running, 15)
        await router.stop()
        await catalog.stop()
    finally:
        await client.close()


async def _tasks(js: Any) -> int:
    try:
        return int((await js.stream_info("KV_AMP_TASKS")).state.messages)
    except NotFoundError:
        return 0


def _json(result: Any) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


async def test_replaying_an_event_whose_cause_was_fixed_makes_one_run_and_again_none(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path, cli: Cli
) -> None:
    js = nc.jetstream()
    admin = StackBuilder(tmp_path).broker(nats_url).service("router", "router-admin", AURORA_ROUTER_SERVE_AGENTS="1")
    async with admin.up():
        for area, document in (("agents", AGENT), ("bindings", BINDING)):
            await admin_request(nc, subjects, area, "apply", {"document": document}, timeout=20)

    doc = event("order.placed", {"order": 17})  # no session: nothing to deliver, no gateway needed
    await _give_up_without_runs_stream(nats_url, subjects, doc)
    listed = _json(await asyncio.to_thread(cli, "dlq", "list", "--stage", "router", "--json"))
    assert listed["count"] == 1
    (letter,) = listed["dead_letters"]
    assert letter["via"] == "stage" and letter["deliveries"] == 2 and letter["consumer"] == "router"
    assert "gave up after 2 deliveries" in letter["reason"] and "storing the run record failed" in letter["reason"]

    # The cause is fixed: a runner creates the run records bucket again; the routers are back.
    async with StackBuilder(tmp_path).broker(nats_url).service("runner", "runner", **RUNNER_ENV).router().up():
        assert await _tasks(js) == 0  # nothing ran the event before the replay

        replayed = _json(await asyncio.to_thread(cli, "dlq", "replay", str(letter["seq"]), "--keep", "--json"))
        assert [r["seq"] for r in replayed["replayed"]] == [letter["seq"]]
        task_id = task_id_of(doc, "orders")

        async def finished() -> dict[str, Any] | None:
            try:
                entry = await (await js.key_value("AMP_TASKS")).get(task_id)
            except NotFoundError:
                return None
            found: dict[str, Any] = json.loads(entry.value or b"{}")
            return found if found.get("state") == "succeeded" else None

        task = await poll(finished, timeout=30, what="the replayed event's task to succeed")
        assert task["answer"] == "order seen" and task["attempts"] == 1
        runs_after_first = (await js.stream_info("KV_AMP_RUN_RECORDS")).state.last_seq

        # Again (the dead letter was kept): JetStream knows this replay's id and drops it; past its
        # duplicate window the copy would be stored, routed to the same run id and find its task.
        again = _json(await asyncio.to_thread(cli, "dlq", "replay", str(letter["seq"]), "--json"))
        assert again["replayed"][0]["duplicate"] is True
        events_last = (await js.stream_info("AMP_EVENTS")).state.last_seq
        await consumed(js, "AMP_EVENTS", "router", through=events_last, what="the router to route every replay")
        await consumed(js, "KV_AMP_RUN_RECORDS", "runner", what="the runners to finish")
        assert (await js.stream_info("KV_AMP_RUN_RECORDS")).state.last_seq == runs_after_first
        assert await _tasks(js) == 1
        final = await finished()
        assert final is not None and final["attempts"] == 1
        # Replayed without --keep: gone from the DLQ.
        assert _json(await asyncio.to_thread(cli, "dlq", "list", "--json"))["count"] == 0
        stored = await js.get_msg("AMP_EVENTS", replayed["replayed"][0]["stored_seq"])
        assert stored.data == json.dumps(doc, ensure_ascii=False).encode()  # the original bytes
        headers = stored.headers or {}
        assert headers["Nats-Msg-Id"] == f"dlq-replay:AMP_DLQ:{letter['seq']}"
        assert dl.ORIGINAL_HEADERS not in headers
