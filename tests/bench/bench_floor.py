"""`make bench-floor`: what Aurora's messages cost by themselves. Four pipelines on one
nats-server, in turns in one run:

- raw: bench-e2e's raw nats-py baseline (three JetStream hops and a request/reply in this
  process), the yardstick of issue 38's goals;
- floor: raw nats-py making every message Aurora makes for a playbook event
  (`tests/bench/floor_pipeline.py`: ten stored, each publish acked, every read and ack), in this
  process on one connection;
- processes: the same, each service's place in a process of its own, as Aurora's services are;
- aurora: the platform itself, as bench-e2e runs it.

What the floor and the processes pay, any implementation of Aurora's path that keeps its messages
and its processes pays on this machine with no work of its own: a goal they miss, Aurora must
miss too; Aurora's distance from them is what its own code costs. The raw and floor CPU include
this process (the benchmark's driver too, as bench-e2e's raw figure does); the processes' and
Aurora's do not.

BENCH_SEQ (default 200) sequential events, BENCH_BURST (default 800), BENCH_ROUNDS (default 2).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from tests.bench.bench_e2e import (
    AT_ONCE,
    BACK_TO_BACK,
    MODES,
    Burst,
    Latencies,
    RawPipeline,
    Replies,
    aurora_services,
    burst,
    chat_driver,
    measured,
    sequential,
)
from tests.bench.common import REPO, env_int, record, run_on_service_loop
from tests.bench.counting import MessageCounter, Snapshot, counted, per_unit
from tests.bench.floor_pipeline import (
    ROLES,
    FloorPipeline,
    create_streams,
    relay_subject,
    signal_payload,
    signal_subject,
)
from tests.bench.resources import CpuMeter, ms_per_together
from tests.bench.stacks import bench_stack

FLOOR = "bench-floor"  # the in-process floor's connection; each place's process adds "-<role>"
SIDES = ("raw", "floor", "processes", "aurora")


@contextlib.contextmanager
def role_processes(url: str, prefix: str) -> Iterator[dict[str, int]]:
    """Each place of the floor pipeline in a process of its own, serving once this yields their pids."""
    started = {role: subprocess.Popen([sys.executable, "-m", "tests.bench.floor_pipeline", url, prefix, role],
                                      cwd=REPO, stdout=subprocess.PIPE, text=True) for role in ROLES}
    try:
        for role, process in started.items():
            assert process.stdout is not None
            if process.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the floor's {role} process did not start (exit code {process.poll()})")
        yield {role: process.pid for role, process in started.items()}
    finally:
        for process in started.values():
            process.terminate()
        for process in started.values():
            process.wait(timeout=10)


async def replies_on(nc: NATS, subject: str) -> Replies:
    replies = Replies()

    async def seen(msg: Msg) -> None:
        replies.saw(msg.data)

    await nc.subscribe(subject, cb=seen)
    await nc.flush()
    return replies


def signal_sender(nc: NATS, subject: str) -> Callable[[str], Awaitable[None]]:
    js = nc.jetstream()

    async def send(key: str) -> None:
        await js.publish(subject, signal_payload(key), headers={"Nats-Msg-Id": key})

    return send


def summary(seqs: list[Latencies], bursts: list[Burst], cpu: dict[str, float],
            by_mode: dict[str, float]) -> dict[str, Any]:
    return {"p50_ms": min(run.p50 for run in seqs), "per_s": max(run.rate for run in bursts),
            "cpu_ms_per_event": cpu, "cpu_ms_total": sum(cpu.values()), "cpu_ms_total_by_mode": by_mode}


async def main() -> int:
    n_seq, n_burst, rounds = env_int("BENCH_SEQ", 200), env_int("BENCH_BURST", 800), env_int("BENCH_ROUNDS", 2)
    with tempfile.TemporaryDirectory(prefix="aurora-bench-floor-") as tmp, \
            bench_stack(Path(tmp), aurora_services(Path(tmp))) as stack:
        nc, aurora_replies, via_aurora = await chat_driver(stack.url)
        raw, raw_replies = RawPipeline(nc, "rawfloor"), Replies()

        async def relayed(msg: Msg) -> None:
            raw_replies.saw(msg.data)

        await raw.start(relayed)
        floor_nc = await nats.connect(stack.url, pending_size=64 * 1024 * 1024, name=FLOOR)
        floor = FloorPipeline(floor_nc, "floor")
        await create_streams(nc.jetstream(), "floor")
        await floor.start(ROLES)
        apart_streams = await create_streams(nc.jetstream(), "apart")
        server = stack.pids()["nats-server"]
        with role_processes(stack.url, "apart") as role_pids:
            sends = {"raw": (raw.send, raw_replies),
                     "floor": (signal_sender(nc, signal_subject("floor")),
                               await replies_on(nc, relay_subject("floor"))),
                     "processes": (signal_sender(nc, signal_subject("apart")),
                                   await replies_on(nc, relay_subject("apart"))),
                     "aurora": (via_aurora, aurora_replies)}
            for send, replies in sends.values():
                await sequential("warm-up", send, replies, 30)
            here = os.getpid()
            pids = {"raw": {"nats-server": server, "raw nats-py": here},
                    "floor": {"nats-server": server, "floor nats-py": here},
                    "processes": {"nats-server": server, **role_pids}, "aurora": stack.pids()}
            # each side's CPU kept apart by how the events were sent (bench_e2e.py says why)
            meters = {side: {mode: CpuMeter(pids[side]) for mode in MODES} for side in SIDES}
            seqs: dict[str, list[Latencies]] = {side: [] for side in SIDES}
            bursts: dict[str, list[Burst]] = {side: [] for side in SIDES}
            counter, counts = MessageCounter(nc.jetstream(), stack.monitor_url), Snapshot()
            for r in range(rounds):  # interleaved, so drift on a shared machine hits every side
                for side in SIDES:
                    send, replies = sends[side]
                    one_by_one = sequential(side, send, replies, n_seq)
                    seqs[side].append(await measured(meters[side][BACK_TO_BACK], one_by_one))
                for side in SIDES:
                    send, replies = sends[side]
                    if side == "processes":  # counted too: one place per process, as Aurora's are
                        result, counts = await counted(counter, counts, burst(side, send, replies, n_burst),
                                                       meters[side][AT_ONCE])
                    else:
                        result = await measured(meters[side][AT_ONCE], burst(side, send, replies, n_burst))
                    bursts[side].append(result)
                print(f"round {r + 1}/{rounds}: p50 " + ", ".join(f"{s} {seqs[s][-1].p50:.2f} ms" for s in SIDES)
                      + "; events/s " + ", ".join(f"{s} {bursts[s][-1].rate:,.0f}" for s in SIDES), flush=True)
            events = rounds * (n_seq + n_burst)
            apart_counts = per_unit(Snapshot(), counts, units=rounds * n_burst)
        await floor.stop()
        await raw.stop()
        await floor_nc.close()
        await nc.close()
    events_by_mode = {BACK_TO_BACK: rounds * n_seq, AT_ONCE: rounds * n_burst}
    results = {side: summary(seqs[side], bursts[side], ms_per_together(meters[side].values(), events),
                             {mode: meters[side][mode].total_ms_per(events_by_mode[mode]) for mode in MODES})
               for side in SIDES}
    raw_fig = results["raw"]
    print(f"what Aurora's messages cost by themselves: {n_seq} sequential and {n_burst} at once, best of {rounds}; "
          f"{os.cpu_count()} CPUs")
    for side in SIDES:
        fig = results[side]
        cpu = ", ".join(f"{k} {v:.2f}" for k, v in fig["cpu_ms_per_event"].items())
        print(f"  {side}: p50 {fig['p50_ms']:.2f} ms ({fig['p50_ms'] / raw_fig['p50_ms']:.1f}× raw), "
              f"{fig['per_s']:,.0f} events/s ({fig['per_s'] / raw_fig['per_s']:.0%} of raw), "
              f"CPU ms per event {fig['cpu_ms_total']:.2f} ({cpu}; "
              + ", ".join(f"{mode} {ms:.2f}" for mode, ms in fig["cpu_ms_total_by_mode"].items()) + ")")
    stored = {k: v for k, v in apart_counts.stored.items() if k in apart_streams}
    sent = {k: v for k, v in apart_counts.sent.items() if k.startswith(f"{FLOOR}-")}
    print(f"  the processes' messages per event (counted): {sum(stored.values()):.2f} stored ("
          + ", ".join(f"{k} {v:.2f}" for k, v in stored.items()) + f"), {sum(sent.values()):.2f} sent ("
          + ", ".join(f"{k} {v:.2f}" for k, v in sent.items()) + ")")
    record("floor", {**results, "processes_messages": {"stored": stored, "stored_total": sum(stored.values()),
                                                       "sent": sent, "sent_total": sum(sent.values())}})
    return 0


if __name__ == "__main__":
    sys.exit(run_on_service_loop(main()))
