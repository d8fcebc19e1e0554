"""Raw nats-py making the messages Aurora makes for a playbook event, and nothing else: the floor
any implementation of Aurora's path pays on this nats-server, whatever its own code does.

For each event, as bench-e2e counts Aurora's (docs/benchmarks.md, "Messages counted"), with
payloads of the sizes Aurora's have on that path, in five places named after the services:

- bridge: takes the signal from a signals stream, publishes the event (a stream with a duplicate
  window) and acks;
- router: takes every event from the events stream; for the app's event it creates the run
  record (a KV-like stream: create-only, direct gets) and acks; a platform event it only acks;
- runner: takes the run record, reads the task's key by direct get (not there), asks the
  gateway, then creates the task (create-only) and acks;
- gateway: reads the ledger entry and the run record by direct get at once, claims the call
  (create-only), asks the supervisor on the app's relay subject, answers the runner, then writes
  the ledger's `done` (expected revision) and the audit record;
- supervisor: answers on the relay;
- bridge again: takes each task revision and publishes two platform events (`task.running`,
  `task.succeeded`), and each audit record and publishes one (`tool.succeeded`); the router acks
  all three.

Ten messages stored per event, as Aurora's ten; every publish to a stream waits for its ack. Left
out: Aurora's pull requests kept open, the router's look at its bindings (a stream info at most
every 20 ms), the supervisor's stdio to the app. Each stage fetches with nats-py's batch fetch and
acks its batch at once, as bench-e2e's raw baseline (`RawPipeline`) does.

`BENCH_FLOOR_PULLER=1` has every stage fetch with Aurora's `Puller` (shared/jetstream/pulls.py:
one pull request kept open, each message delivered as it is stored) instead of nats-py's fetch.
`BENCH_FLOOR_EACH=1` has the runner place take runs as Aurora's runner does (a task each, as many
at once as its default concurrency, fetched as slots free up) instead of working each fetched
batch in step.

The places run in this process on one connection (`FloorPipeline(...).start(ROLES)`), or each in
a process of its own, as Aurora's services do:

    python -m tests.bench.floor_pipeline <nats url> <prefix> <role>

which prints "ready" once it serves and runs until terminated.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StreamConfig

from services.runner.config import RunnerConfig
from shared.jetstream.pulls import Puller
from tests.bench.common import run_on_service_loop

ROLES = ("bridge", "router", "runner", "gateway", "supervisor")
# Payload sizes in bytes of Aurora's messages on the path (read off bench-e2e's stack, 2026-12-06).
SIZES = {"event": 1000, "record": 1800, "task": 2800, "claim": 410, "done": 700, "audit": 920,
         "task_event": 970, "tool_event": 900, "call": 1050, "relay": 750, "relay_answer": 800,
         "call_answer": 600}
# (stream, kept like a KV bucket): create-only writes, one message per subject, direct gets
STREAMS = (("SIG", False), ("EVT", False), ("REC", True), ("TASKS", True), ("LEDGER", True), ("AUDIT", False))
CREATE_ONLY = {"Nats-Expected-Last-Subject-Sequence": "0"}
STAGE_BATCH = 256
RUNNER_CONCURRENCY = RunnerConfig.concurrency  # Aurora's runner's default, for BENCH_FLOOR_EACH


def payload(kind: str, key: str) -> bytes:
    """`key` (the event's, which the clock and the stages go by) padded to the size of its kind."""
    body = key.encode() + b"|"
    return body + b"x" * max(SIZES[kind] - len(body), 0)


def signal_payload(key: str) -> bytes:
    return key.encode() + b"|signal"


def signal_subject(prefix: str) -> str:
    """Where the benchmark publishes a pipeline's signals."""
    return f"{prefix}.sig.x"


def relay_subject(prefix: str) -> str:
    """Where a pipeline's reply reaches the app's side, carrying the event's key."""
    return f"{prefix}.relay.c2s"


def fetcher(sub: JetStreamContext.PullSubscription) -> Callable[..., Awaitable[list[Msg]]]:
    """nats-py's fetch, or Aurora's `Puller` with BENCH_FLOOR_PULLER."""
    return Puller(sub).fetch if os.environ.get("BENCH_FLOOR_PULLER") else sub.fetch


def key_of(data: bytes) -> str:
    return data.split(b"|", 1)[0].decode()


async def create_streams(js: JetStreamContext, prefix: str) -> list[str]:
    """The pipeline's streams and its stages' durable consumers; their names."""
    names = []
    for stream, kv in STREAMS:
        name = f"{prefix}_{stream}"
        await js.add_stream(StreamConfig(
            name=name, subjects=[f"{prefix}.{stream.lower()}.>"],
            retention=RetentionPolicy.WORK_QUEUE if stream == "SIG" else RetentionPolicy.LIMITS,
            max_msgs_per_subject=1 if kv else -1, allow_direct=kv, duplicate_window=120.0))
        if stream != "LEDGER":  # read by direct get only
            await js.add_consumer(name, ConsumerConfig(durable_name=f"{stream.lower()}-floor",
                                                       ack_policy=AckPolicy.EXPLICIT, max_ack_pending=8192))
        names.append(name)
    return names


class FloorPipeline:
    """Aurora's messages for each event, in raw nats-py, on `nc`. An event is a signal carrying
    its key (`signal_payload(key)` on `signal_subject(prefix)`, published by the benchmark's own
    connection, as the app's are); `relay_subject(prefix)` carries the key once the event's reply
    is sent."""

    def __init__(self, nc: NATS, prefix: str) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self._p = prefix
        self._tasks: list[asyncio.Task[None]] = []
        self._calls: set[asyncio.Task[None]] = set()
        self._relay = relay_subject(prefix)

    async def start(self, roles: Iterable[str]) -> None:
        """Serve these places (the streams are made already: `create_streams`)."""
        stages: dict[str, list[tuple[str, Callable[[Msg], Awaitable[Any]]]]] = {
            "bridge": [("SIG", self._bridge_signal), ("TASKS", self._bridge_task), ("AUDIT", self._bridge_audit)],
            "router": [("EVT", self._router)], "runner": [("REC", self._runner)]}
        for role in roles:
            if role == "supervisor":
                await self._nc.subscribe(self._relay, cb=self._supervisor)
            elif role == "gateway":
                await self._nc.subscribe(f"{self._p}.call", cb=self._gateway)
            for stream, work in stages.get(role, []):
                sub = await self._js.pull_subscribe_bind(f"{stream.lower()}-floor", stream=f"{self._p}_{stream}")
                each = os.environ.get("BENCH_FLOOR_EACH") and role == "runner"
                self._tasks.append(asyncio.create_task(self._each(sub, work) if each else self._stage(sub, work)))
        await self._nc.flush()

    async def stop(self) -> None:
        for task in [*self._tasks, *self._calls]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._calls, return_exceptions=True)

    # ------------------------------------------------------------------ the places' work

    async def _bridge_signal(self, msg: Msg) -> None:
        key = key_of(msg.data)
        await self._js.publish(f"{self._p}.evt.app.message.received", payload("event", key),
                               headers={"Nats-Msg-Id": key})

    async def _bridge_task(self, msg: Msg) -> None:
        key = key_of(msg.data)
        await asyncio.gather(*(self._js.publish(f"{self._p}.evt.runner.task.{state}", payload("task_event", key),
                                                headers={"Nats-Msg-Id": f"task-{key}-{state}"})
                               for state in ("running", "succeeded")))

    async def _bridge_audit(self, msg: Msg) -> None:
        key = key_of(msg.data)
        await self._js.publish(f"{self._p}.evt.app.tool.succeeded", payload("tool_event", key),
                               headers={"Nats-Msg-Id": f"tool-{key}"})

    async def _router(self, msg: Msg) -> None:
        if msg.subject.endswith(".message.received"):
            key = key_of(msg.data)
            await self._js.publish(f"{self._p}.rec.{key}", payload("record", key), headers=CREATE_ONLY)

    async def _runner(self, msg: Msg) -> None:
        key = key_of(msg.data)
        await self._direct_get("TASKS", f"{self._p}.tasks.{key}")
        await self._nc.request(f"{self._p}.call", payload("call", key), timeout=30)
        await self._js.publish(f"{self._p}.tasks.{key}", payload("task", key), headers=CREATE_ONLY)

    async def _gateway(self, msg: Msg) -> None:
        # A task per call, as the gateway serves calls at once; nats-py runs one callback at a time.
        task = asyncio.create_task(self._call(msg))
        self._calls.add(task)
        task.add_done_callback(self._calls.discard)

    async def _call(self, msg: Msg) -> None:
        key = key_of(msg.data)
        ledger = f"{self._p}.ledger.{key}"
        await asyncio.gather(self._direct_get("LEDGER", ledger), self._direct_get("REC", f"{self._p}.rec.{key}"))
        claimed = await self._js.publish(ledger, payload("claim", key), headers=CREATE_ONLY)
        await self._nc.request(self._relay, payload("relay", key), timeout=30)
        await msg.respond(payload("call_answer", key))
        await asyncio.gather(
            self._js.publish(ledger, payload("done", key),
                             headers={"Nats-Expected-Last-Subject-Sequence": str(claimed.seq)}),
            self._js.publish(f"{self._p}.audit.app", payload("audit", key), headers={"Nats-Msg-Id": f"audit-{key}"}))

    async def _supervisor(self, msg: Msg) -> None:
        await msg.respond(payload("relay_answer", key_of(msg.data)))

    # ------------------------------------------------------------------ plumbing

    async def _direct_get(self, stream: str, subject: str) -> Msg:
        request = json.dumps({"last_by_subj": subject}).encode()
        return await self._nc.request(f"$JS.API.DIRECT.GET.{self._p}_{stream}", request, timeout=30)

    async def _each(self, sub: JetStreamContext.PullSubscription, work: Callable[[Msg], Awaitable[Any]]) -> None:
        """As Aurora's runner takes runs: a task each, at most RUNNER_CONCURRENCY at once, as many
        fetched as there are free slots, each acked when its work is done."""
        running: set[asyncio.Task[None]] = set()
        fetch = fetcher(sub)
        while True:
            free = RUNNER_CONCURRENCY - len(running)
            if free <= 0:
                await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
                continue
            try:
                msgs = await fetch(free, timeout=1.0)
            except (TimeoutError, nats.errors.TimeoutError):
                continue
            for m in msgs:
                task = asyncio.create_task(_one(m, work))
                running.add(task)
                task.add_done_callback(running.discard)

    async def _stage(self, sub: JetStreamContext.PullSubscription, work: Callable[[Msg], Awaitable[Any]]) -> None:
        fetch = fetcher(sub)
        while True:
            try:
                msgs = await fetch(STAGE_BATCH, timeout=1.0)
            except (TimeoutError, nats.errors.TimeoutError):
                continue
            await asyncio.gather(*(work(m) for m in msgs))
            await asyncio.gather(*(m.ack() for m in msgs))


async def _one(msg: Msg, work: Callable[[Msg], Awaitable[Any]]) -> None:
    await work(msg)
    await msg.ack()


async def serve_role(url: str, prefix: str, role: str) -> int:
    """One place in a process of its own, until SIGTERM."""
    nc = await nats.connect(url, pending_size=64 * 1024 * 1024, name=f"bench-floor-{role}")
    pipeline = FloorPipeline(nc, prefix)
    await pipeline.start([role])
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print("ready", flush=True)
    await stop.wait()
    await pipeline.stop()
    await nc.close()
    return 0


if __name__ == "__main__":
    sys.exit(run_on_service_loop(serve_role(*sys.argv[1:4])))
