"""`make bench-router`: events/s from AMP_EVENTS to runs through the router (50 bindings),
against raw nats-py pull + ack + publish of the same bytes, on the same nats-server in one run.

Both sides start from the same N events already stored and stop when the N-th message is in
their destination stream; both fetch in batches of the same size and pipeline their publishes.
The raw side does the least a correct forwarder does (one publish with `Nats-Msg-Id`, one ack);
the router also validates each event, picks a binding and writes the run's record, which is the
run (issue 38: runners consume it from KV_AMP_RUN_RECORDS) and holds the event's route trace
(services/router/recorded_traces.py), create-only.
BENCH_N (events, default 20000), BENCH_ROUNDS (default 3), AURORA_ROUTER_BATCH (default 256).
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import nats
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StreamConfig

from aurora_cli.localnats import LocalNats
from services.router.config import RouterSettings
from services.router.router import RouterConfig
from services.router.stores import open_stores
from services.router.wiring import RouterSetup, build_router
from shared.contracts.agent import Agent
from shared.contracts.binding import Binding
from shared.contracts.pipeline import Pipeline
from shared.contracts.resource import ResourceModel, canonical_json, parse_resource
from shared.contracts.subjects import Subjects
from shared.wiring import Connections
from tests.bench.common import Result, Stopwatch, best, env_int, record, run_on_service_loop, table
from tests.bench.counting import last_sequences

GOAL = 0.75  # issue 38: events/s with 50 bindings at three quarters of raw nats-py
APPS = ("im.polaris.qq", "im.polaris.wx", "crm.orders")
TYPES = ("message.received", "message.deleted", "group.member_joined", "friend.request_received")


def make_events(n: int) -> list[tuple[str, bytes, str]]:
    """(subject, bytes, message id) of n valid events, typical of a chat platform."""
    subjects = Subjects("amp")
    events = []
    for i in range(n):
        app, event_type = APPS[i % 3], TYPES[i % 4]
        message_id = f"bench-{i:08d}"
        doc = {
            "header": {"protocol": "amp/1.0", "method": "aurora/event", "message_id": message_id,
                       "timestamp": "2026-06-19T12:00:00+08:00", "source": {"app": app, "instance": "default"}},
            "payload": {"type": event_type, "session_id": f"group_{i % 97}", "bot": f"bot{i % 4}",
                        "conversation": f"conv{i % 31}", "actor": {"id": f"user{i % 501}", "kind": "user"},
                        "subject": {"kind": "message", "id": f"m{i}"},
                        "data": {"text": f"hello number {i} 你好", "lang": "zh", "vip": i % 11 == 0}},
        }
        events.append((subjects.event(app, event_type), json.dumps(doc).encode(), message_id))
    return events


def fifty_bindings() -> list[ResourceModel]:
    """50 bindings: most are scoped with filters that rarely hold, so the router evaluates several
    candidates per event before its choice, as a real installation would."""
    docs: list[dict[str, Any]] = []
    for i in range(40):
        event_type = TYPES[i % 4]
        docs.append({
            "id": f"scoped-{i:02d}", "event_pattern": event_type if i % 2 else event_type.split(".")[0] + ".*",
            "priority": i % 7, "target_type": "agent", "target_id": "helper",
            "filters": [{"field": "bot", "op": "eq", "value": f"bot{i % 4}"},
                        {"field": "conversation", "op": "in", "value": [f"conv-x{i}", f"conv-y{i}"]}],
        })
    for i in range(6):
        docs.append({"id": f"regex-{i}", "event_pattern": "message.*", "priority": 3,
                     "target_type": "agent", "target_id": "helper",
                     "filters": [{"field": "data.text", "op": "regex", "value": f"^urgent-{i}"}]})
    docs.append({"id": "vip-pipeline", "event_pattern": "message.received", "priority": 2,
                 "target_type": "pipeline", "target_id": "support",
                 "filters": [{"field": "data.vip", "op": "eq", "value": True}]})
    docs.append({"id": "messages", "event_pattern": "message.*", "target_type": "agent", "target_id": "chat"})
    docs.append({"id": "groups", "event_pattern": "group.*", "target_type": "agent", "target_id": "greeter"})
    docs.append({"id": "rest", "event_pattern": "*", "target_type": "agent", "target_id": "catch-all"})
    resources: list[ResourceModel] = [parse_resource(Binding, doc) for doc in docs]
    for agent_id, events in (("helper", ["*"]), ("chat", ["message.*"]), ("greeter", ["group.*"]),
                             ("catch-all", ["*"])):
        resources.append(parse_resource(Agent, {"id": agent_id, "agent_kind": "llm", "events": events}))
    resources.append(parse_resource(Pipeline, {"id": "support"}))
    return resources


async def publish_all(js: JetStreamContext, events: list[tuple[str, bytes, str]], prefix: str | None) -> None:
    pending = []
    for subject, data, message_id in events:
        target = subject if prefix is None else f"{prefix}.{subject}"
        pending.append(await js.publish_async(target, data, headers={"Nats-Msg-Id": message_id}))
        if len(pending) >= 2000:
            await asyncio.gather(*pending)
            pending.clear()
    await asyncio.gather(*pending)


async def stored(js: JetStreamContext, stream: str) -> int:
    return int((await js.stream_info(stream)).state.messages)


async def wait_for_count(js: JetStreamContext, stream: str, n: int, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while await stored(js, stream) < n:
        if time.monotonic() > deadline:
            raise TimeoutError(f"benchmark timed out waiting for {n} messages in {stream}")
        await asyncio.sleep(0.01)


async def stored_per_event(js: JetStreamContext, before: dict[str, int], n: int) -> dict[str, float]:
    """Messages each stream gained per event since `before` (the input, stored before, is not counted)."""
    after = await last_sequences(js)
    return {name: (seq - before.get(name, 0)) / n for name, seq in sorted(after.items()) if seq != before.get(name, 0)}


async def bench_raw(nc: NATS, events: list[tuple[str, bytes, str]], batch: int) -> Result:
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="RAW_SRC", subjects=["raw.src.>"]))
    await js.add_stream(StreamConfig(name="RAW_DST", subjects=["raw.dst.>"], retention=RetentionPolicy.WORK_QUEUE,
                                     duplicate_window=600))
    await publish_all(js, events, "raw.src")
    before = await last_sequences(js)
    await js.add_consumer("RAW_SRC", ConsumerConfig(durable_name="raw", ack_policy=AckPolicy.EXPLICIT,
                                                    max_ack_pending=8192))
    sub = await js.pull_subscribe_bind("raw", stream="RAW_SRC")
    stop = asyncio.Event()

    async def forward() -> None:
        while not stop.is_set():
            try:
                msgs = await sub.fetch(batch, timeout=0.2)
            except (TimeoutError, nats.errors.TimeoutError):
                continue
            futures = [await js.publish_async("raw.dst" + m.subject[7:], m.data,
                                              headers={"Nats-Msg-Id": m.headers["Nats-Msg-Id"] if m.headers else ""})
                       for m in msgs]
            await asyncio.wait(futures)
            for m in msgs:
                await m.ack()

    with Stopwatch() as clock:
        task = asyncio.create_task(forward(), name="bench-raw")
        await wait_for_count(js, "RAW_DST", len(events))
    stop.set()
    await task
    await sub.unsubscribe()
    return Result("raw nats-py (pull, publish, ack)", len(events), clock.seconds,
                  await stored_per_event(js, before, len(events)))


async def bench_router(nc: NATS, events: list[tuple[str, bytes, str]], batch: int) -> Result:
    js = nc.jetstream()
    subjects = Subjects("amp")
    stores = await open_stores(js, subjects)
    for resource in fifty_bindings():
        kv = {"Binding": stores.bindings, "Agent": stores.agents, "Pipeline": stores.pipelines}[
            resource.__class__.__name__]
        await kv.put(str(resource.id), canonical_json(resource))
    await publish_all(js, events, None)
    before = await last_sequences(js)
    setup = RouterSetup(subjects, RouterSettings(router=RouterConfig(batch=batch, instance="bench")))
    service = await build_router(setup, Connections(nc))
    await service.start()
    stop = asyncio.Event()
    with Stopwatch() as clock:
        task = asyncio.create_task(service.run(stop), name="bench-router")
        await wait_for_count(js, f"KV_{subjects.stream('RUN_RECORDS')}", len(events))  # the runs are records
    stop.set()
    await task
    statuses = dict(service.parts.router.stats.statuses)
    await service.stop()
    assert statuses.get("dispatched") == len(events), statuses
    # A trace for every event, in its run record: none of its own.
    assert await stored(js, f"KV_{subjects.stream('RUN_RECORDS')}") == len(events), "a record for every run"
    assert await stored(js, f"KV_{subjects.stream('ROUTES')}") == 0, "a dispatched event's trace is in its record"
    return Result("router (validate, select, run record = run, with trace, ack)", len(events), clock.seconds,
                  await stored_per_event(js, before, len(events)))


async def one_round(events: list[tuple[str, bytes, str]], batch: int) -> tuple[Result, Result]:
    """Raw, then router, each on a fresh nats-server of its own (no leftover streams or files)."""
    results = []
    for bench in (bench_raw, bench_router):
        with tempfile.TemporaryDirectory(prefix="aurora-bench-router-") as tmp:
            server = LocalNats(Path(tmp) / "js", log_file=Path(tmp) / "nats.log")
            server.start()
            try:
                nc = await nats.connect(server.url)
                results.append(await bench(nc, events, batch))
                await nc.drain()
            finally:
                server.stop()
    return results[0], results[1]


async def main() -> None:
    n = env_int("BENCH_N", 20_000)
    rounds = env_int("BENCH_ROUNDS", 3)
    batch = env_int("AURORA_ROUTER_BATCH", RouterConfig().batch)
    events = make_events(n)
    raw: list[Result] = []
    routed: list[Result] = []
    for r in range(rounds):  # interleaved, so drift on a shared machine hits both
        base, measured = await one_round(events, batch)
        raw.append(base)
        routed.append(measured)
        print(f"round {r + 1}/{rounds}: raw {base.rate:,.0f}/s, router {measured.rate:,.0f}/s "
              f"({measured.rate / base.rate:.0%})", flush=True)
    print(f"router benchmark: N={n:,} events, 50 bindings, batch {batch}, best of {rounds} round(s)")
    print(table(best(raw), best(routed), goal=GOAL))
    base, measured = best(raw), best(routed)
    for result in (base, measured):
        print(f"stored per event, {result.name.split(' (')[0]}: {sum(result.stored.values()):.2f} ("
              + ", ".join(f"{k} {v:.2f}" for k, v in result.stored.items()) + ")")
    record("router", {"raw_per_s": base.rate, "per_s": measured.rate, "ratio": measured.rate / base.rate,
                       "goal": GOAL, "stored_per_event": {"raw": base.stored, "router": measured.stored}})


if __name__ == "__main__":
    run_on_service_loop(main())
