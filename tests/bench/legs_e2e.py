"""`make bench-legs`: where bench-e2e's p50 goes, leg by leg, for Aurora and for its raw nats-py
baseline in the same run; not a benchmark with a goal, a map of the path.

Events are sent one at a time, each after a 30 ms pause. A connection of its own (`bench-spy`)
subscribes to the subjects the path's messages cross, and notes when it first sees each one after
an event was sent. A leg is the time between two such sightings: what the process between them
did, and the message's way through nats-server to the next. The spy's own lag in seeing a
message is in both ends of a leg, so it cancels out; its only cost is one more copy of each of
these messages from the server, the same for Aurora and the baseline. Nothing in the services is
changed or instrumented.

BENCH_LEGS (default 200) events each.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from tests.bench.bench_e2e import RawPipeline, Replies, aurora_services, chat_driver, sequential
from tests.bench.common import env_int, run_on_service_loop
from tests.bench.stacks import bench_stack

SPY = "bench-spy"
RAW = "rawlegs"

# (leg name, what the leg is, the subject whose first sighting ends it), in the path's order
AURORA_LEGS = (
    ("event", "the app's signal stored and fetched by the event-bridge, the event made and published",
     "amp.evt.*.message.received"),
    ("run", "the event fetched by the router, routed, its run record published",
     "$KV.AMP_RUN_RECORDS.>"),
    ("task look", "the run fetched by a runner, which asks whether the run's task is stored",
     "$JS.API.DIRECT.GET.KV_AMP_TASKS.>"),
    ("tool call", "that read answered, the playbook rendered, the reply's tool call sent",
     "amp.tool.call"),
    ("gateway reads", "the call received by the gateway, which reads its ledger entry and run record",
     "$JS.API.DIRECT.GET.KV_AMP_RUN_RECORDS.>"),
    ("claim", "the reads answered, custody and admission, the write claimed in the call ledger",
     "$KV.AMP_CALL_LEDGER.calls.>"),
    ("relay", "the claim stored, the call sent on the chat app's relay to its supervisor",
     "amp.mcp.*.*.c2s"),
)
RAW_LEGS = (
    ("event", "the signal stored and fetched, the event published", f"{RAW}.evt.>"),
    ("run", "the event fetched, the run published", f"{RAW}.run.>"),
    ("call", "the run fetched, the request sent", f"{RAW}.call"),
    ("relay", "the request received, the relay published", f"{RAW}.relay"),
)


class Sightings:
    """When each subject of a path was first seen since `clear()`."""

    def __init__(self) -> None:
        self.first: dict[str, float] = {}
        self.ended = asyncio.Event()  # the path's last subject seen

    def clear(self) -> None:
        self.first.clear()
        self.ended.clear()

    async def watch(self, spy: NATS, legs: tuple[tuple[str, str, str], ...]) -> None:
        last = legs[-1][0]
        for name, _, subject in legs:
            async def seen(_: Msg, name: str = name) -> None:
                self.first.setdefault(name, time.perf_counter())
                if name == last:
                    self.ended.set()

            await spy.subscribe(subject, cb=seen)
        await spy.flush()


def leg_times(started: float, first: dict[str, float], legs: tuple[tuple[str, str, str], ...]) -> dict[str, float]:
    """Each leg's milliseconds for one event, from its send through the sightings in order; a leg
    not seen (or seen out of order) ends the list there."""
    times: dict[str, float] = {}
    previous = started
    for name, _, _ in legs:
        at = first.get(name)
        if at is None or at < previous:
            break
        times[name] = (at - previous) * 1000
        previous = at
    return times


async def walk(send: Callable[[str], Awaitable[None]], replies: Replies, sightings: Sightings,
               legs: tuple[tuple[str, str, str], ...], n: int,
               pause: float) -> tuple[dict[str, list[float]], list[float]]:
    """Each leg's times and the whole trip's over `n` events sent one at a time, `pause` apart."""
    per_leg: dict[str, list[float]] = {name: [] for name, _, _ in legs}
    trips: list[float] = []
    for _ in range(n):
        await asyncio.sleep(pause)
        sightings.clear()
        started = time.perf_counter()
        trips += (await sequential("legs", send, replies, 1)).millis
        with contextlib.suppress(TimeoutError):  # the spy's connection may hear the last a moment later
            await asyncio.wait_for(sightings.ended.wait(), 0.1)
        for name, ms in leg_times(started, sightings.first, legs).items():
            per_leg[name].append(ms)
    return per_leg, trips


def table(title: str, legs: tuple[tuple[str, str, str], ...], per_leg: dict[str, list[float]],
          trips: list[float]) -> list[str]:
    lines = [f"{title}: p50 of the whole trip {statistics.median(trips):.2f} ms ({len(trips)} events)",
             "  | leg | p50 ms | p90 ms | what happens in it |", "  |---|---|---|---|"]
    for name, what, _ in legs:
        times = sorted(per_leg[name])
        if times:
            lines.append(f"  | {name} | {statistics.median(times):.2f} | {times[int(len(times) * 0.9)]:.2f} | {what} |")
    total = sum(statistics.median(per_leg[name]) for name, _, _ in legs if per_leg[name])
    lines.append(f"  sum of the legs' p50: {total:.2f} ms (the rest of the trip: the reply's way to the app's side)")
    return lines


async def main() -> int:
    n = env_int("BENCH_LEGS", 200)
    pause = env_int("BENCH_LEGS_PAUSE_MS", 30) / 1000
    with tempfile.TemporaryDirectory(prefix="aurora-bench-legs-") as tmp, \
            bench_stack(Path(tmp), aurora_services(Path(tmp))) as stack:
        nc, aurora_replies, via_aurora = await chat_driver(stack.url)
        raw_replies = Replies()

        async def relayed(msg: Msg) -> None:
            raw_replies.saw(msg.data)

        raw = RawPipeline(nc, RAW)
        await raw.start(relayed)
        spy = await nats.connect(stack.url, name=SPY)
        aurora_seen, raw_seen = Sightings(), Sightings()
        await aurora_seen.watch(spy, AURORA_LEGS)
        await raw_seen.watch(spy, RAW_LEGS)
        await sequential("warm-up", via_aurora, aurora_replies, 30)
        await sequential("warm-up", raw.send, raw_replies, 30)
        raw_legs, raw_trips = await walk(raw.send, raw_replies, raw_seen, RAW_LEGS, n, pause)
        aurora_legs, aurora_trips = await walk(via_aurora, aurora_replies, aurora_seen, AURORA_LEGS, n, pause)
        await raw.stop()
        await spy.close()
        await nc.close()
    print("\n".join(table("raw nats-py", RAW_LEGS, raw_legs, raw_trips)))
    print("\n".join(table("Aurora", AURORA_LEGS, aurora_legs, aurora_trips)))
    return 0


if __name__ == "__main__":
    sys.exit(run_on_service_loop(main()))
