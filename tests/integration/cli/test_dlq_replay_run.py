"""`aurora dlq replay` of a run the runners gave up on: the router writes its record again (a new
revision, the same bytes), the runners' durable delivers it, and it runs; replayed again once it
succeeded, it runs nothing twice; a record that is gone is an error naming the run.

A run is its record (`$KV.AMP_RUN_RECORDS.run.<run id>`), which the operator may not publish to,
so the replay goes through the router (`router.replay_run`, services/router/run_replay.py). The
real router process routes the event and, from the server's `MSG_TERMINATED` advisory,
dead-letters the run that the runners' durable gave up on: here the test's process holds that
durable while no runner is up, fails the run once and then terminates it, as a runner gives up on
what it cannot run. Then a real runner process starts and the real CLI replays.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS
from nats.js.errors import NotFoundError

from services.runner.config import RunnerConfig
from services.runner.stores import runs_consumer
from shared.contracts.run import run_id_for
from shared.contracts.subjects import Subjects
from shared.jetstream.consumers import ensure_durable
from shared.nats.admin_service import admin_request
from tests.harness.cli import Cli
from tests.harness.runs import RUNNER_ENV, event, publish_events, task_id_of
from tests.harness.stack import StackBuilder
from tests.harness.waiting import consumed, poll

AGENT = {"kind": "Agent", "id": "flaky-agent", "agent_kind": "playbook", "events": ["order.shipped"],
         "playbook": {"steps": [], "answer": "shipment seen"}}
BINDING = {"kind": "Binding", "id": "shipments", "event_pattern": "order.shipped", "target_type": "agent",
           "target_id": "flaky-agent", "priority": 10}
RECORDS = "KV_AMP_RUN_RECORDS"


def _json(result: Any) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


async def _give_up_on_the_run(nc: NATS, subjects: Subjects) -> int:
    """The runners' durable, held here: the run fails once (nak), then is given up on (term).
    Returns the record's stream sequence."""
    js = nc.jetstream()
    sub = await js.pull_subscribe_bind(RunnerConfig().durable, stream=RECORDS)
    try:
        (first,) = await sub.fetch(1, timeout=20)
        await first.nak()
        (again,) = await sub.fetch(1, timeout=20)
        assert again.metadata.sequence.stream == first.metadata.sequence.stream
        await again.term()
        return int(first.metadata.sequence.stream)
    finally:
        await sub.unsubscribe()


async def test_a_dead_lettered_run_is_replayed_through_the_router_and_runs_once(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path, cli: Cli
) -> None:
    js = nc.jetstream()
    doc = event("order.shipped", {"order": 23})  # no session: nothing to deliver, no gateway needed
    run_id = run_id_for(doc["header"]["message_id"], "shipments")
    task_id = task_id_of(doc, "shipments")
    router = StackBuilder(tmp_path).broker(nats_url).service("router", "router", AURORA_ROUTER_SERVE_AGENTS="1")
    async with router.up():
        for area, document in (("agents", AGENT), ("bindings", BINDING)):
            await admin_request(nc, subjects, area, "apply", {"document": document}, timeout=20)
        await ensure_durable(js, RECORDS, runs_consumer(RunnerConfig(), subjects))
        await publish_events(js, subjects, [doc])
        record_seq = await _give_up_on_the_run(nc, subjects)

        async def dead_lettered() -> dict[str, Any] | None:
            listed = _json(await asyncio.to_thread(cli, "dlq", "list", "--stage", "runner", "--json"))
            return listed["dead_letters"][0] if listed["count"] else None

        letter = await poll(dead_lettered, timeout=20, what="the runner's dead letter, from the advisory")
        assert letter["original_subject"] == f"$KV.AMP_RUN_RECORDS.run.{run_id}" and letter["via"] == "advisory"
        assert letter["sequence"] == record_seq

        tasks = await js.key_value("AMP_TASKS") if await _has_tasks(js) else None

        async def task() -> dict[str, Any] | None:
            bucket = tasks or await js.key_value("AMP_TASKS")
            try:
                entry = await bucket.get(task_id)
            except NotFoundError:
                return None
            return json.loads(entry.value or b"{}")  # type: ignore[no-any-return]

        async with StackBuilder(tmp_path).broker(nats_url).service("runner", "runner", **RUNNER_ENV).up():
            await consumed(js, RECORDS, "runner", what="the runner to have nothing left")
            assert await task() is None  # the given-up run is not run again by itself
            original = (await js.get_msg(RECORDS, record_seq)).data  # the bucket keeps one revision a key

            replayed = _json(await asyncio.to_thread(cli, "dlq", "replay", str(letter["seq"]), "--keep", "--json"))
            (item,) = replayed["replayed"]
            assert item["run_id"] == run_id and item["stream"] == RECORDS and item["stored_seq"] > record_seq

            async def succeeded() -> dict[str, Any] | None:
                found = await task()
                return found if found and found.get("state") == "succeeded" else None

            done = await poll(succeeded, timeout=30, what="the replayed run's task to succeed")
            assert done["answer"] == "shipment seen" and done["attempts"] == 1
            stored = await js.get_msg(RECORDS, item["stored_seq"])
            assert stored.data == original  # the same bytes, a new revision

            # Again, once it succeeded: delivered again, it finds its task and runs nothing twice.
            again = _json(await asyncio.to_thread(cli, "dlq", "replay", str(letter["seq"]), "--keep", "--json"))
            await consumed(js, RECORDS, "runner", through=again["replayed"][0]["stored_seq"],
                           what="the runner to take the second replay")
            assert await task() == done

            # The record is gone (as past its 30-day TTL): a clear error naming the run.
            await js.purge_stream(RECORDS, subject=f"$KV.AMP_RUN_RECORDS.run.{run_id}")
            gone = await asyncio.to_thread(cli, "dlq", "replay", str(letter["seq"]))
            assert gone.returncode != 0
            assert run_id in gone.stderr and "gone" in gone.stderr, gone.stderr
            assert _json(await asyncio.to_thread(cli, "dlq", "list", "--json"))["count"] == 1  # still there


async def _has_tasks(js: Any) -> bool:
    try:
        await js.stream_info("KV_AMP_TASKS")
    except NotFoundError:
        return False
    return True
