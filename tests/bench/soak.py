"""`make soak`: steady load through the whole platform for SOAK_SECONDS (600), and a check that
no Aurora service's resident memory grew more than 5 % over it (nats-server's is printed).

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
from pathlib import Path

import nats
from nats.aio.msg import Msg

from tests.bench.bench_e2e import SUBJECTS, Replies, Stack, configure, native_event
from tests.bench.common import env_int, record
from tests.bench.resources import rss_mib
from tests.integration.runner.helpers import CHAT

GROWTH = 0.05
WARM_UP = 60.0
SAMPLE_EVERY = 10.0


async def main() -> int:
    seconds = env_int("SOAK_SECONDS", 600)
    rate = env_int("SOAK_RATE", 10)
    with tempfile.TemporaryDirectory(prefix="aurora-soak-") as tmp:
        stack = Stack(Path(tmp))
        stack.start()
        try:
            nc = await nats.connect(stack.server.url)
            await configure(nc)
            replies = Replies()

            async def seen(msg: Msg) -> None:
                replies.saw(msg.data)

            await nc.subscribe(SUBJECTS.mcp(CHAT, "default", "c2s"), cb=seen)
            js = nc.jetstream()
            samples: dict[str, list[float]] = {name: [] for name in stack.pids()}
            baseline: dict[str, float] = {}
            pending: list[asyncio.Future[float]] = []
            started = time.monotonic()
            next_sample = started + SAMPLE_EVERY
            sent = 0
            while (now := time.monotonic()) - started < seconds:
                key = f"evkey-{uuid.uuid4().hex[:12]}"
                pending.append(replies.expect(key))
                await js.publish(SUBJECTS.signal(CHAT, "native_event"), native_event(key), headers={"Nats-Msg-Id": key})
                sent += 1
                if now >= next_sample:
                    next_sample += SAMPLE_EVERY
                    for name, pid in stack.pids().items():
                        samples[name].append(rss_mib(pid))
                    if not baseline and now - started >= WARM_UP:
                        baseline = {name: values[-1] for name, values in samples.items()}
                    print(f"{now - started:5.0f} s: {sent} events, " + ", ".join(
                        f"{n} {v[-1]:.0f} MiB" for n, v in samples.items()), flush=True)
                await asyncio.sleep(max(0.0, started + sent / rate - time.monotonic()))
            # Every event must be answered; a platform that fell behind the rate gets two minutes.
            await asyncio.wait(pending, timeout=120)
            unanswered = sum(1 for future in pending if not future.done())
            await nc.close()
        finally:
            stack.stop()
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
    record("soak", {"seconds": seconds, "events": sent, "unanswered": unanswered, "rss_growth": growth,
                    "limit": GROWTH})
    if unanswered:
        print(f"FAILED: {unanswered} of {sent} events unanswered (the platform fell behind {rate} events/s)")
        return 1
    if growth[worst] > GROWTH:
        print(f"FAILED: {worst} grew {growth[worst]:.1%} (limit {GROWTH:.0%})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
