"""What every load scenario does around its faults: start the stack, warm it up, drive the load
while the faults run, drain, count, judge, stop everything it started."""

from __future__ import annotations

import asyncio
import dataclasses
import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from tests.chaos.load import LoadRun, connect
from tests.chaos.model import Outcome
from tests.chaos.stack import ChaosStack, Server, StackSpec
from tests.chaos.tally import Tally

Faults = Callable[[LoadRun], Awaitable[None]]
# A scenario's own check after the load: what is wrong (empty when it held), and what it saw.
Check = Callable[[ChaosStack, LoadRun, Tally], Awaitable[tuple[list[str], str]]]


class Phases:
    """How long each part of a scenario took (the detail says where its minutes went)."""

    def __init__(self) -> None:
        self._last = time.monotonic()
        self._spans: list[str] = []

    def done(self, name: str) -> None:
        now = time.monotonic()
        self._spans.append(f"{name} {now - self._last:.0f}s")
        self._last = now

    def text(self) -> str:
        return "took: " + ", ".join(self._spans)


def judge(tally: Tally, *, faulted: bool) -> list[str]:
    """The guarantees every scenario holds the platform to."""
    problems = []
    if tally.acknowledged == 0:
        problems.append("no input was acknowledged")
    if tally.lost:
        problems.append(f"{tally.lost} acknowledged inputs got no reply")
    if tally.duplicated:
        problems.append(f"{tally.duplicated} duplicated replies")
    if tally.unfinished:
        problems.append(f"{tally.unfinished} acknowledged inputs have no terminal task")
    if faulted and tally.recover_s is None:
        problems.append("no input sent after the fault was ever answered")
    return problems


def kill(*names: str, at: float = 0.35, down: float = 1.0) -> Faults:
    """SIGKILL the services `names` at once at `at` of the load, start them again `down`
    seconds later."""

    async def inject(run: LoadRun) -> None:
        await run.at(at)
        for name in names:
            await asyncio.to_thread(run.stack.kill, name)
        run.mark_fault()
        await asyncio.sleep(down)
        for name in names:
            await asyncio.to_thread(run.stack.revive, name)

    return inject


async def loaded(workdir: Path, scale: float, *, name: str, faults_text: str, spec: StackSpec | None = None,
                 faults: Faults | None = None, checks: Sequence[Check] = (), rate: float = 10.0,
                 seconds: float = 20.0, drain: float = 60.0, server: Server | None = None) -> Outcome:
    """One load scenario: `faults(run)` runs beside the load, each of `checks` after it."""
    stack = ChaosStack(workdir, spec or StackSpec(), server)
    phases = Phases()
    try:
        outcome = await _measure(stack, phases, name=name, faults_text=faults_text, faults=faults, checks=checks,
                                 rate=rate, seconds=max(3.0, seconds * scale), drain=drain)
    except Exception as exc:  # a scenario that could not run is a failed row, with why
        outcome = Outcome(scenario=name, load="-", faults=faults_text, acknowledged=0, lost=0, duplicated=0,
                          recover_s=None, passed=False,
                          detail=f"error: {exc!r}; {phases.text()}\n{traceback.format_exc(limit=6)}")
    finally:
        await asyncio.to_thread(stack.stop)
    phases.done("stop")
    return dataclasses.replace(outcome, detail="; ".join([outcome.detail, *stack.slow_stops, phases.text()]))


async def _measure(stack: ChaosStack, phases: Phases, *, name: str, faults_text: str, faults: Faults | None,
                   checks: Sequence[Check], rate: float, seconds: float, drain: float) -> Outcome:
    await asyncio.to_thread(stack.start)
    phases.done("start")
    nc = await connect(stack.url)
    try:
        run = LoadRun(stack, nc, rate=rate, seconds=seconds)
        await run.prepare()
        phases.done("warm-up")
        await run.run(faults)
        phases.done("load")
        await run.drain(drain)
        tally = await run.tally()
        phases.done("drain")
        problems = judge(tally, faulted=run.fault_at is not None)
        seen = []
        for check in checks:
            more, saw = await check(stack, run, tally)
            problems += more
            seen.append(saw)
        # What went wrong first (the markdown table quotes a failed row's first line), then what was seen.
        return Outcome(scenario=name, load=run.describe, faults=faults_text, acknowledged=tally.acknowledged,
                       lost=tally.lost, duplicated=tally.duplicated, recover_s=tally.recover_s,
                       passed=not problems, detail="; ".join([*problems, tally.summary(), *filter(None, seen)]))
    finally:
        await nc.close()
