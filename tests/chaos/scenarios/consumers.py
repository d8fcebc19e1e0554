"""A slow external consumer on `amp.evt.>` (a durable pull consumer that acks one event every
ACK_EVERY seconds) does not slow the pipeline: the median time from input to reply after it
starts stays near the median before it."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import AckPolicy, ConsumerConfig

from tests.chaos.kit import loaded
from tests.chaos.load import SUBJECTS, LoadRun
from tests.chaos.model import Outcome, Scenario
from tests.chaos.stack import ChaosStack
from tests.chaos.tally import Tally, median_latency

DURABLE = "chaos-slow-reader"
ACK_EVERY = 0.5
SLOWER = 2.0  # how much slower the pipeline may get (the machine is shared) …
OR_PLUS = 1.0  # … or how many seconds, whichever is more


class SlowReader:
    def __init__(self) -> None:
        self.acked = 0
        self.task: asyncio.Task[None] | None = None

    async def inject(self, run: LoadRun) -> None:
        await run.at(0.3)
        js = run.nc.jetstream()
        await js.add_consumer(SUBJECTS.stream("EVENTS"), ConsumerConfig(
            durable_name=DURABLE, filter_subject=SUBJECTS.events_all, ack_policy=AckPolicy.EXPLICIT,
            max_ack_pending=16))
        sub = await js.pull_subscribe_bind(DURABLE, SUBJECTS.stream("EVENTS"))
        run.mark_fault()
        self.task = asyncio.create_task(self._read(sub), name="chaos-slow-reader")
        await run.at(1.0)
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task

    async def _read(self, sub: object) -> None:
        while True:
            try:
                msgs = await sub.fetch(4, timeout=2)  # type: ignore[attr-defined]
            except NatsTimeoutError:
                continue
            for msg in msgs:
                await asyncio.sleep(ACK_EVERY)
                await msg.ack()
                self.acked += 1


async def slow_consumer(workdir: Path, scale: float) -> Outcome:
    reader = SlowReader()

    async def check(stack: ChaosStack, run: LoadRun, tally: Tally) -> tuple[list[str], str]:
        inputs = {s.n: s for s in run.sent}
        before = median_latency(inputs, run.replies(), until=run.fault_at)
        after = median_latency(inputs, run.replies(), since=run.fault_at)
        info = await run.nc.jetstream().consumer_info(SUBJECTS.stream("EVENTS"), DURABLE)
        behind = info.num_pending or 0
        saw = (f"median input→reply {before} s before the slow reader, {after} s with it; "
               f"it acked {reader.acked} and is {behind} events behind")
        problems = []
        if behind == 0:
            problems.append("the reader kept up: it was not slow, the scenario proves nothing")
        if before is None or after is None or after > max(before * SLOWER, before + OR_PLUS):
            problems.append(f"the pipeline slowed down: {before} s → {after} s")
        return problems, saw

    return await loaded(workdir, scale, name="slow-consumer",
                        faults_text=f"a pull consumer on amp.evt.> acking 1 event / {ACK_EVERY:g} s",
                        faults=reader.inject, checks=[check], rate=10.0, seconds=15.0)


SCENARIOS = [Scenario("slow-consumer", slow_consumer)]
