"""Helpers for router tests against a real nats-server."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig

from services.router.config import RouterSettings
from services.router.router import RouterConfig
from services.router.wiring import RouterService, RouterSetup, build_router
from shared.contracts.run import RunEnvelope, decode_recorded_run
from shared.contracts.subjects import Subjects
from shared.jetstream.run_records import run_records_filter
from shared.jetstream.streams import run_records_bucket
from shared.nats.admin_service import admin_request
from shared.wiring import Connections
from tests.harness.run_records import run_count as run_count  # how many runs are queued
from tests.harness.run_records import runs_stream_name
from tests.harness.waiting import poll as poll  # one poll helper for every test


@asynccontextmanager
async def running_router(nc: NATS, subjects: Subjects, *, capabilities: dict[str, tuple[str, ...]] | None = None,
                         **config: Any) -> AsyncIterator[RouterService]:
    """A RouterService in this process, routing until the block ends."""
    config.setdefault("fetch_timeout", 0.2)
    # No gateway runs in these tests: the router serves agents itself (AURORA_ROUTER_SERVE_AGENTS=1).
    settings = RouterSettings(router=RouterConfig(instance="test", **config), serve_agents=True)
    service = await build_router(RouterSetup(subjects, settings, capabilities or {}), Connections(nc))
    await service.start()
    stop = asyncio.Event()
    task = asyncio.create_task(service.run(stop), name="test-router")
    try:
        yield service
    finally:
        stop.set()
        await task
        await service.stop()


async def apply(nc: NATS, subjects: Subjects, area: str, document: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = await admin_request(nc, subjects, area, "apply", {"document": document})
    return result


async def publish_events(js: JetStreamContext, subjects: Subjects, docs: Iterable[dict[str, Any]],
                         *, window: int = 1000) -> None:
    """Straight into AMP_EVENTS, pipelined, with `Nats-Msg-Id` = message id like the bridge."""
    pending = []
    for doc in docs:
        subject = subjects.event(doc["header"]["source"]["app"], doc["payload"]["type"])
        pending.append(await js.publish_async(subject, json.dumps(doc).encode(),
                                              headers={"Nats-Msg-Id": doc["header"]["message_id"]}))
        if len(pending) >= window:
            await asyncio.gather(*pending)
            pending.clear()
    await asyncio.gather(*pending)



async def router_current(nc: NATS, subjects: Subjects) -> None:
    """Wait until the router's copies have taken in every write its buckets had when called: its
    watches may lag a write acknowledged a moment ago, and a *changed* binding or target is not
    read through (docs/concepts/routing.md), so a test about a change waits for this positive sign."""
    js = nc.jetstream()
    last = {area: (await js.stream_info(f"KV_{subjects.stream(area.upper())}")).state.last_seq
            for area in ("bindings", "agents", "pipelines")}

    async def current() -> bool:
        revisions = (await admin_request(nc, subjects, "router", "health"))["revisions"]
        return all(revisions[area] >= seq for area, seq in last.items())

    await poll(current, what=f"the router's copies at {last}")


async def stream_count(js: JetStreamContext, stream: str) -> int:
    return int((await js.stream_info(stream)).state.messages)


async def drain_runs(js: JetStreamContext, subjects: Subjects, expected: int,
                     durable: str = "test-runs") -> list[tuple[Msg, RunEnvelope]]:
    """Take every run the router queued, as a runner would (from the run records that are runs)."""
    stream = runs_stream_name(subjects)
    await js.add_consumer(stream, config=ConsumerConfig(
        durable_name=durable, ack_policy=AckPolicy.EXPLICIT, max_ack_pending=-1,
        filter_subject=run_records_filter(run_records_bucket(subjects).name)))
    sub = await js.pull_subscribe_bind(durable, stream=stream)
    runs: list[tuple[Msg, RunEnvelope]] = []
    while len(runs) < expected:
        try:
            batch = await sub.fetch(min(1000, expected - len(runs)), timeout=2)
        except (TimeoutError, NatsTimeoutError):
            break
        for msg in batch:
            runs.append((msg, decode_recorded_run(msg.data)))
            await msg.ack()
    return runs


async def consumer_done(js: Any, subjects: Subjects) -> bool:
    """Every event stored so far acknowledged by the router. The ack floor is the positive sign:
    "nothing pending" alone can be read before the server has counted a message just stored."""
    stream = subjects.stream("EVENTS")
    last = (await js.stream_info(stream)).state.last_seq
    info = await js.consumer_info(stream, "router")
    return bool(info.ack_floor.stream_seq >= last and info.num_pending == 0 and info.num_ack_pending == 0)


async def setup_resources_min(nc: NATS, subjects: Subjects) -> None:
    async with running_router(nc, subjects):
        await apply(nc, subjects, "agents", {"id": "chat", "agent_kind": "llm", "events": ["*"]})
        await apply(nc, subjects, "bindings", {"id": "all", "event_pattern": "*",
                                               "target_type": "agent", "target_id": "chat"})
