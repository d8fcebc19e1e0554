# Over 300 lines: the Aurora run, its raw nats-py twin and the counted tool calls share one stack and one report
"""`make bench-e2e`: event → reply through the whole platform, against raw nats-py doing the
same JetStream hops in the same run.

Aurora: an app's native event (a signal on `amp.sig.<chat>.native_event`) → event-bridge →
AMP_EVENTS → router → run record (KV_AMP_RUN_RECORDS) → runner (a playbook agent that answers at once) → gateway →
supervisor → the chat app: the clock stops when the reply's `tools/call` crosses the chat
app's relay subject (`….c2s`), which the benchmark watches.

The baseline, raw nats-py in this process: publish to a signals stream; a pull consumer
publishes to an events stream and acks; a second publishes to a runs stream and acks; a third
sends a request to a responder (the gateway's place), which publishes on a relay subject (the
supervisor's) — the same three JetStream hops and the request/reply, with no work in any of
them. Both are measured one event at a time, each sent once the one before was answered
(latency p50/p99), one at a time after the same pauses of up to a second (BENCH_PACED events),
and with BENCH_BURST events published at once (events/s). Also reported: CPU milliseconds per
event in each process, each side's measured over its own stretches (they share nats-server),
each service's resident memory idle and after the load, and the messages counted per event
and per tool call (tests/bench/counting.py): stored per stream, sent and received per process.
The CPU per event is also given apart for the events sent back to back and those sent at once.

BENCH_SEQ (default 200) sequential events, BENCH_BURST (default 1000), BENCH_ROUNDS (default 2).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StreamConfig

from services.mcp_gateway.calls.ledger import heartbeat_key
from shared.clock import now_iso
from shared.contracts.signals import NativeEventSignal, encode_signal
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import call_ledger_bucket
from shared.nats.admin_service import admin_request
from tests.bench.common import env_int, record, run_on_service_loop
from tests.bench.counting import MessageCounter, Snapshot, counted, lines, per_unit
from tests.bench.resources import CpuMeter, ms_per_together, rss_mib
from tests.bench.stacks import bench_stack
from tests.harness.runner_stack import CHAT, stack_apps
from tests.harness.stack import StackBuilder

SUBJECTS = Subjects("amp")
SESSION = "load-room"
DRIVER = "bench-driver"  # this process's connection: the app's side, not counted as Aurora's
TOOL = "test.echo.echo"  # the tool call counted alone: an operator's call of the echo app's read
T = TypeVar("T")


@dataclass(frozen=True)
class Latencies:
    name: str
    millis: list[float]

    @property
    def p50(self) -> float:
        return statistics.median(self.millis)

    @property
    def p99(self) -> float:
        ordered = sorted(self.millis)
        return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


@dataclass(frozen=True)
class Burst:
    name: str
    count: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.count / self.seconds


class Replies:
    """Replies seen on a subject, by the key each one carries; `wait(key)` for one."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[float]] = {}

    def expect(self, key: str) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiting[key] = future
        return future

    def saw(self, data: bytes) -> None:
        text = data.decode(errors="replace")
        marker = text.find("evkey-")
        if marker < 0:
            return
        key = text[marker:marker + 18]
        future = self._waiting.pop(key, None)
        if future is not None and not future.done():
            future.set_result(time.perf_counter())


async def sequential(name: str, send: Callable[[str], Awaitable[None]], replies: Replies, n: int) -> Latencies:
    millis = []
    for _ in range(n):
        key = f"evkey-{uuid.uuid4().hex[:12]}"
        arrived = replies.expect(key)
        started = time.perf_counter()
        await send(key)
        millis.append((await asyncio.wait_for(arrived, 30) - started) * 1000)
    return Latencies(name, millis)


async def paced(send: Callable[[str], Awaitable[None]], replies: Replies, n: int, longest_pause: float) -> Latencies:
    """Events one at a time after pauses of 0 to `longest_pause` seconds (the same pauses every
    run), as a chat's users send them: what each stage does once it has waited idle shows here,
    where back-to-back events never let it wait."""
    millis: list[float] = []
    for i in range(max(n, 1)):
        await asyncio.sleep(longest_pause * ((i * 7919) % 100) / 100)
        millis += (await sequential("paced", send, replies, 1)).millis
    return Latencies("paced", millis)


async def burst(name: str, send: Callable[[str], Awaitable[None]], replies: Replies, n: int) -> Burst:
    keys = [f"evkey-{uuid.uuid4().hex[:12]}" for _ in range(n)]
    arrivals = [replies.expect(key) for key in keys]
    started = time.perf_counter()
    for key in keys:
        await send(key)
    await asyncio.wait_for(asyncio.gather(*arrivals), 300)
    return Burst(name, n, time.perf_counter() - started)


BACK_TO_BACK, AT_ONCE = "back to back", "at once"
MODES = (BACK_TO_BACK, AT_ONCE)


async def measured(cpu: CpuMeter, work: Awaitable[T]) -> T:
    """`work`'s result, its stretch's CPU added to `cpu`."""
    cpu.start()
    try:
        return await work
    finally:
        cpu.stop()


# --------------------------------------------------------------------------- Aurora


def native_event(key: str) -> bytes:
    event = {"header": {"message_id": key, "timestamp": now_iso()},
             "payload": {"type": "message.received", "session_id": SESSION, "data": {"text": key},
                         "actor": {"id": "bench-user", "kind": "user"}}}
    return encode_signal(NativeEventSignal(signal_id=key, app=CHAT, observed_at=now_iso(), event=event))


async def chat_driver(url: str, *, name: str = DRIVER) -> tuple[NATS, Replies, Callable[[str], Awaitable[None]]]:
    """The chat app's side of a benchmark stack, configured: its connection, the replies it hears
    on its relay subject, and `send(key)`, which publishes a native event carrying `key`."""
    nc = await nats.connect(url, pending_size=64 * 1024 * 1024, name=name)
    await configure(nc)
    replies = Replies()

    async def seen(msg: Msg) -> None:
        replies.saw(msg.data)

    await nc.subscribe(SUBJECTS.mcp(CHAT, "default", "c2s"), cb=seen)
    js = nc.jetstream()

    async def send(key: str) -> None:
        await js.publish(SUBJECTS.signal(CHAT, "native_event"), native_event(key), headers={"Nats-Msg-Id": key})

    return nc, replies, send


def aurora_services(folder: Path) -> Callable[[StackBuilder], StackBuilder]:
    """Every service of the event → reply path, one of each, the chat app logging what it sends."""

    def declare(builder: StackBuilder) -> StackBuilder:
        return (builder.apps(stack_apps(folder / "chat.jsonl")).env(AURORA_LOG_LEVEL="INFO")
                .bridge().supervisor().gateway().router().service("runner", "runner"))

    return declare


async def configure(nc: NATS) -> None:
    await admin_request(nc, SUBJECTS, "agents", "apply", {"document": {
        "kind": "Agent", "id": "bench-echo", "agent_kind": "playbook", "events": ["message.received"],
        "playbook": {"steps": [], "answer": "{{ event.data.text }}"}}})
    await admin_request(nc, SUBJECTS, "bindings", "apply", {"document": {
        "kind": "Binding", "id": "bench-echo", "event_pattern": "message.received", "target_type": "agent",
        "target_id": "bench-echo", "priority": 10}})


# --------------------------------------------------------------------------- raw nats-py


class RawPipeline:
    """The same hops, bare: three streams, three pull consumers, one responder, one relay."""

    def __init__(self, nc: NATS, prefix: str) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self._prefix = prefix
        self._tasks: list[asyncio.Task[None]] = []
        self.streams = [f"{prefix}_{stream}" for stream in ("SIG", "EVT", "RUN")]

    async def start(self, relay: Callable[[Msg], Awaitable[None]]) -> None:
        p = self._prefix
        for stream in ("SIG", "EVT", "RUN"):
            await self._js.add_stream(StreamConfig(name=f"{p}_{stream}", subjects=[f"{p}.{stream.lower()}.>"],
                                                   retention=RetentionPolicy.WORK_QUEUE if stream == "RUN"
                                                   else RetentionPolicy.LIMITS))
        await self._nc.subscribe(f"{p}.relay", cb=relay)

        async def respond(msg: Msg) -> None:  # the gateway's place: relay, then answer
            await self._nc.publish(f"{p}.relay", msg.data)
            await msg.respond(b'{"status":"ok"}')

        await self._nc.subscribe(f"{p}.call", cb=respond)
        self._tasks = [
            asyncio.create_task(self._stage(f"{p}_SIG", f"{p}.sig.>", lambda m: self._js.publish(
                f"{p}.evt.x", m.data, headers={"Nats-Msg-Id": f"e{m.metadata.sequence.stream}"}))),
            asyncio.create_task(self._stage(f"{p}_EVT", f"{p}.evt.>", lambda m: self._js.publish(
                f"{p}.run.x", m.data, headers={"Nats-Msg-Id": f"r{m.metadata.sequence.stream}"}))),
            asyncio.create_task(self._stage(f"{p}_RUN", f"{p}.run.>", lambda m: self._nc.request(
                f"{p}.call", m.data, timeout=30))),
        ]

    async def _stage(self, stream: str, subject: str, work: Callable[[Msg], Awaitable[Any]]) -> None:
        durable = f"{stream.lower()}-stage"
        await self._js.add_consumer(stream, ConsumerConfig(durable_name=durable, ack_policy=AckPolicy.EXPLICIT,
                                                           max_ack_pending=8192))
        sub = await self._js.pull_subscribe_bind(durable, stream=stream)
        while True:
            try:
                msgs = await sub.fetch(256, timeout=1.0)
            except (TimeoutError, nats.errors.TimeoutError):
                continue
            await asyncio.gather(*(work(m) for m in msgs))
            await asyncio.gather(*(m.ack() for m in msgs))

    async def send(self, key: str) -> None:
        await self._js.publish(f"{self._prefix}.sig.x", key.encode(), headers={"Nats-Msg-Id": key})

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def tool_calls(nc: NATS, n: int) -> None:
    """`n` operator calls of TOOL through the gateway, one at a time."""
    for i in range(n):
        envelope = {"header": {"protocol": "amp/1.0", "method": "tools/call", "message_id": str(uuid.uuid4()),
                               "timestamp": now_iso(), "source": {"app": "bench"}},
                    "payload": {"tool": TOOL, "arguments": {"value": i}, "context": {}}}
        reply = await nc.request(SUBJECTS.operator_tool_call, json.dumps(envelope).encode(), timeout=30)
        payload = json.loads(reply.data)["payload"]
        assert payload["status"] == "ok", payload


# --------------------------------------------------------------------------- the run


async def main() -> int:
    n_seq = env_int("BENCH_SEQ", 200)
    n_burst = env_int("BENCH_BURST", 1000)
    n_paced = env_int("BENCH_PACED", 30)
    longest_pause = 1.0
    rounds = env_int("BENCH_ROUNDS", 2)
    with tempfile.TemporaryDirectory(prefix="aurora-bench-e2e-") as tmp, \
            bench_stack(Path(tmp), aurora_services(Path(tmp))) as stack:
        nc = await nats.connect(stack.url, pending_size=64 * 1024 * 1024, name=DRIVER)
        await configure(nc)
        aurora_replies, raw_replies = Replies(), Replies()

        async def seen(msg: Msg) -> None:
            aurora_replies.saw(msg.data)

        await nc.subscribe(SUBJECTS.mcp(CHAT, "default", "c2s"), cb=seen)
        js = nc.jetstream()

        async def via_aurora(key: str) -> None:
            await js.publish(SUBJECTS.signal(CHAT, "native_event"), native_event(key),
                             headers={"Nats-Msg-Id": key})

        async def relayed(msg: Msg) -> None:
            raw_replies.saw(msg.data)

        raw = RawPipeline(nc, "rawbench")
        await raw.start(relayed)
        await sequential("warm-up", via_aurora, aurora_replies, 20)
        await sequential("warm-up", raw.send, raw_replies, 20)
        idle = {name: rss_mib(pid) for name, pid in stack.pids().items()}
        results: dict[str, list[Any]] = {"seq_raw": [], "seq": [], "burst_raw": [], "burst": []}
        counter, counts = MessageCounter(js, stack.monitor_url), Snapshot()
        ledger = call_ledger_bucket(SUBJECTS).name  # each gateway's heartbeat: one a second, not per event
        await counter.count_timed(nc, f"KV_{ledger}", f"$KV.{ledger}.{heartbeat_key('*')}")
        # each side's CPU kept apart by how events were sent: one at a time wakes every process for
        # each message, at once lets each take several per turn
        aurora_cpu = {mode: CpuMeter(stack.pids()) for mode in MODES}
        # the baseline's own CPU: its Python is this process; its server is the one Aurora uses
        raw_cpu = {mode: CpuMeter({"nats-server": stack.pids()["nats-server"], "raw nats-py": os.getpid()})
                   for mode in MODES}
        for r in range(rounds):  # interleaved, so drift on a shared machine hits both
            results["seq_raw"].append(await measured(raw_cpu[BACK_TO_BACK],
                                                     sequential("raw nats-py", raw.send, raw_replies, n_seq)))
            seq_run, counts = await counted(counter, counts, sequential("aurora", via_aurora, aurora_replies, n_seq),
                                            aurora_cpu[BACK_TO_BACK])
            results["seq"].append(seq_run)
            results["burst_raw"].append(await measured(raw_cpu[AT_ONCE],
                                                       burst("raw nats-py", raw.send, raw_replies, n_burst)))
            burst_run, counts = await counted(counter, counts, burst("aurora", via_aurora, aurora_replies, n_burst),
                                              aurora_cpu[AT_ONCE])
            results["burst"].append(burst_run)
            print(f"round {r + 1}/{rounds}: p50 raw {results['seq_raw'][-1].p50:.2f} ms, aurora "
                  f"{results['seq'][-1].p50:.2f} ms; burst raw {results['burst_raw'][-1].rate:,.0f}/s, "
                  f"aurora {results['burst'][-1].rate:,.0f}/s", flush=True)
        events_by_mode = {BACK_TO_BACK: rounds * n_seq, AT_ONCE: rounds * n_burst}
        events = sum(events_by_mode.values())
        cpu, raw_cpu_per_event = ms_per_together(aurora_cpu.values(), events), ms_per_together(raw_cpu.values(), events)
        by_mode = {mode: {"aurora": aurora_cpu[mode].total_ms_per(events_by_mode[mode]),
                          "raw": raw_cpu[mode].total_ms_per(events_by_mode[mode])} for mode in MODES}
        loaded = {name: rss_mib(pid) for name, pid in stack.pids().items()}
        per_event = per_unit(Snapshot(), counts, units=events, ignore=[DRIVER, *raw.streams])
        pauses = await paced(via_aurora, aurora_replies, n_paced, longest_pause)
        raw_pauses = await paced(raw.send, raw_replies, n_paced, longest_pause)  # the same pauses
        await tool_calls(nc, 5)  # warm-up
        call_meter = CpuMeter(stack.pids())
        _, call_counts = await counted(counter, Snapshot(), tool_calls(nc, n_seq), call_meter)
        call_cpu = call_meter.ms_per(n_seq)
        per_call = per_unit(Snapshot(), call_counts, units=n_seq, ignore=[DRIVER, *raw.streams])
        await raw.stop()
        await nc.close()
    seq_raw = min(results["seq_raw"], key=lambda r: r.p50)
    seq = min(results["seq"], key=lambda r: r.p50)
    b_raw = max(results["burst_raw"], key=lambda r: r.rate)
    b = max(results["burst"], key=lambda r: r.rate)
    print(f"end-to-end benchmark: event → reply, a playbook agent that answers at once; {n_seq} sequential "
          f"and {n_burst} at once, best of {rounds}; {os.cpu_count()} CPUs")
    print(f"  latency p50: raw {seq_raw.p50:.2f} ms, aurora {seq.p50:.2f} ms ({seq.p50 / seq_raw.p50:.1f}×); "
          f"p99: raw {seq_raw.p99:.2f} ms, aurora {seq.p99:.2f} ms")
    print(f"  after pauses of up to {longest_pause:g} s ({n_paced} events): p50 raw {raw_pauses.p50:.2f} ms, "
          f"aurora {pauses.p50:.2f} ms ({pauses.p50 / raw_pauses.p50:.1f}×); slowest raw "
          f"{max(raw_pauses.millis):.2f} ms, aurora {max(pauses.millis):.2f} ms")
    print(f"  throughput: raw {b_raw.rate:,.0f} events/s, aurora {b.rate:,.0f} events/s ({b.rate / b_raw.rate:.0%})")
    print("  CPU ms per event: " + ", ".join(f"{k} {v:.2f}" for k, v in cpu.items())
          + f"; {sum(cpu.values()):.2f} in all; raw nats-py: "
          + ", ".join(f"{k} {v:.2f}" for k, v in raw_cpu_per_event.items()))
    print("  CPU ms per event, all processes, " + "; ".join(
        f"{mode}: aurora {v['aurora']:.2f}, raw {v['raw']:.2f}" for mode, v in by_mode.items()))
    print("\n".join(lines("messages per event (counted)", per_event)))
    print("\n".join(lines(f"messages per tool call ({TOOL}, counted)", per_call)))
    print("  CPU ms per tool call: " + ", ".join(f"{k} {v:.2f}" for k, v in call_cpu.items())
          + f"; {sum(call_cpu.values()):.2f} in all")
    print("  RSS MiB idle → loaded: " + ", ".join(f"{k} {idle[k]:.0f} → {loaded[k]:.0f}" for k in idle))
    record("e2e", {
        "latency_ms": {"raw_p50": seq_raw.p50, "raw_p99": seq_raw.p99, "p50": seq.p50, "p99": seq.p99,
                       "p50_ratio": seq.p50 / seq_raw.p50, "paused_p50": pauses.p50,
                       "paused_slowest": max(pauses.millis), "paused_events": n_paced,
                       "raw_paused_p50": raw_pauses.p50, "raw_paused_slowest": max(raw_pauses.millis)},
        "throughput": {"raw_per_s": b_raw.rate, "per_s": b.rate, "ratio": b.rate / b_raw.rate},
        "cpu_ms_per_event": cpu, "raw_cpu_ms_per_event": raw_cpu_per_event, "cpu_ms_per_event_by_mode": by_mode,
        "rss_mib": {"idle": idle, "loaded": loaded},
        "messages_per_event": per_event.as_json(),
        "tool_call": {"tool": TOOL, "cpu_ms": call_cpu, "messages": per_call.as_json()},
    })
    return 0


if __name__ == "__main__":
    sys.exit(run_on_service_loop(main()))
