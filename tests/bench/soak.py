"""`make soak`: steady load through the whole platform for SOAK_SECONDS (600), and a check that
no Aurora service's resident memory grew more than 5 % over it (nats-server's is printed), and
that no process's CPU per event grew with what it has handled (see `cpu_growth`).

The load is the end-to-end benchmark's (native chat events answered by a playbook agent) at
SOAK_RATE events/s (10: a soak looks for growth under a load the platform keeps up with on a
shared 2-core machine; its capacity is `make bench`'s figure, and at 50/s the soak only measured a
growing backlog). Memory is sampled every 10 s; the baseline is the sample after the
first minute (caches, pools and JetStream buffers have filled by then), the result the
median of the last three samples, so one garbage-collection spike decides nothing."""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from tests.bench.bench_e2e import aurora_services, chat_driver
from tests.bench.common import env_int, record
from tests.bench.resources import cpu_seconds, rss_mib
from tests.bench.stacks import bench_stack

GROWTH = 0.05
CPU_GROWTH = 2.0  # a process's CPU per event may rise at most this much more than the median's
WARM_UP = 60.0
WINDOW = 60.0  # the CPU per event of the first and of the last minute after the warm-up
SAMPLE_EVERY = 10.0


@dataclass(frozen=True)
class CpuSample:
    at: float  # seconds into the soak
    events: int
    cpu: dict[str, float]  # CPU seconds of each process so far


def cpu_per_event(first: CpuSample, last: CpuSample) -> dict[str, float]:
    events = max(1, last.events - first.events)
    return {name: (last.cpu[name] - first.cpu[name]) / events for name in last.cpu if name in first.cpu}


def cpu_growth(samples: list[CpuSample]) -> dict[str, float] | None:
    """Each process's CPU per event in the last minute over the first minute after the warm-up,
    divided by the median process's ratio; None when the soak has no two separate minutes."""
    after = [s for s in samples if s.at >= WARM_UP]
    if not after or samples[-1].at - after[0].at < 2 * WINDOW:
        return None
    start = after[0]
    first_end = next(s for s in after if s.at - start.at >= WINDOW)
    last_start = next(s for s in reversed(after) if samples[-1].at - s.at >= WINDOW)
    early, late = cpu_per_event(start, first_end), cpu_per_event(last_start, samples[-1])
    ratios = {name: late[name] / early[name] for name in late if early.get(name)}
    machine = statistics.median(ratios.values())
    return {name: ratio / machine for name, ratio in ratios.items()}


def chat_app_pid(supervisor: int) -> int | None:
    """The chat app the supervisor runs (where the soak's replies go)."""
    for task in Path(f"/proc/{supervisor}/task").iterdir():
        for child in (task / "children").read_text().split():
            if b"apps.aurora_app_chat" in Path(f"/proc/{child}/cmdline").read_bytes():
                return int(child)
    return None


async def main() -> int:
    seconds = env_int("SOAK_SECONDS", 600)
    rate = env_int("SOAK_RATE", 10)
    with tempfile.TemporaryDirectory(prefix="aurora-soak-") as tmp, \
            bench_stack(Path(tmp), aurora_services(Path(tmp))) as stack:
        nc, replies, send = await chat_driver(stack.url, name="soak-driver")
        samples: dict[str, list[float]] = {name: [] for name in stack.pids()}
        on_path = dict(stack.pids())
        chat = chat_app_pid(on_path["supervisor"])
        if chat is not None:
            on_path["chat app"] = chat
        cpu: list[CpuSample] = []
        baseline: dict[str, float] = {}
        pending: list[asyncio.Future[float]] = []
        started = time.monotonic()
        next_sample = started + SAMPLE_EVERY
        sent = 0
        while (now := time.monotonic()) - started < seconds:
            key = f"evkey-{uuid.uuid4().hex[:12]}"
            pending.append(replies.expect(key))
            await send(key)
            sent += 1
            if now >= next_sample:
                next_sample += SAMPLE_EVERY
                for name, pid in stack.pids().items():
                    samples[name].append(rss_mib(pid))
                cpu.append(CpuSample(now - started, sent, {n: cpu_seconds(pid) for n, pid in on_path.items()}))
                if not baseline and now - started >= WARM_UP:
                    baseline = {name: values[-1] for name, values in samples.items()}
                print(f"{now - started:5.0f} s: {sent} events, " + ", ".join(
                    f"{n} {v[-1]:.0f} MiB" for n, v in samples.items()), flush=True)
            await asyncio.sleep(max(0.0, started + sent / rate - time.monotonic()))
        # Every event must be answered; a platform that fell behind the rate gets two minutes.
        await asyncio.wait(pending, timeout=120)
        unanswered = sum(1 for future in pending if not future.done())
        await nc.close()
    if not baseline:
        print(f"soak too short to measure: SOAK_SECONDS must exceed the {WARM_UP:.0f} s warm-up")
        return 2
    growth = {name: statistics.median(values[-3:]) / baseline[name] - 1 for name, values in samples.items()}
    # nats-server is printed, not judged: JetStream keeps every event of the soak (AMP_EVENTS, the
    # audit, the signals) and the server caches stored blocks in memory, so its RSS follows the
    # data kept, which the streams' limits bound; Aurora's own processes must stay flat.
    judged = {name: g for name, g in growth.items() if name != "nats-server"}
    worst = max(judged, key=lambda n: judged[n])
    answered = "every one answered" if not unanswered else f"{unanswered} NOT answered 2 minutes after the last"
    print(f"soak: {sent} events in {seconds} s at {rate}/s, {answered}; RSS growth after the warm-up: "
          + ", ".join(f"{n} {g:+.1%}" for n, g in growth.items()))
    cpu_rise = cpu_growth(cpu)
    if cpu_rise is None:
        print(f"CPU per event not judged: SOAK_SECONDS must exceed the warm-up and two {WINDOW:.0f} s windows")
    else:
        print("CPU per event, last minute over the first after the warm-up, against the median process's: "
              + ", ".join(f"{n} {r:.2f}×" for n, r in cpu_rise.items()))
    record("soak", {"seconds": seconds, "events": sent, "unanswered": unanswered, "rss_growth": growth,
                    "limit": GROWTH, "cpu_per_event_growth": cpu_rise, "cpu_limit": CPU_GROWTH})
    if unanswered:
        print(f"FAILED: {unanswered} of {sent} events unanswered (the platform fell behind {rate} events/s)")
        return 1
    if growth[worst] > GROWTH:
        print(f"FAILED: {worst} grew {growth[worst]:.1%} (limit {GROWTH:.0%})")
        return 1
    slowest = max(cpu_rise, key=lambda n: cpu_rise[n]) if cpu_rise else None
    if cpu_rise and slowest is not None and cpu_rise[slowest] > CPU_GROWTH:
        print(f"FAILED: {slowest}'s CPU per event rose {cpu_rise[slowest]:.1f}× as much as the median process's "
              f"(limit {CPU_GROWTH:.0f}×): a cost that grows with what it has handled")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
