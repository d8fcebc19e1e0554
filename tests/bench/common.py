"""Small helpers shared by the benchmarks: timing, waiting, and a result table with a ratio."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from shared.service import loop_factory

T = TypeVar("T")

RESULTS = "AURORA_BENCH_RESULTS"
REPO = Path(__file__).resolve().parents[2]


def run_benchmark(module: str, results: Path, *, cwd: Path = REPO) -> int:
    """Run `python -m tests.bench.<module>` from the checkout `cwd` (whose services it starts), its
    figures recorded into `results`; its exit status."""
    return subprocess.run([sys.executable, "-m", f"tests.bench.{module}"], cwd=cwd,
                          env={**os.environ, RESULTS: str(results)}, check=False).returncode


def record(benchmark: str, result: dict[str, object]) -> None:
    """Add this benchmark's figures to the report `make bench` writes (`$AURORA_BENCH_RESULTS`,
    a JSON object by benchmark name); without the variable, nothing is written."""
    path = os.environ.get(RESULTS)
    if not path:
        return
    target = Path(path)
    results = json.loads(target.read_text()) if target.exists() else {}
    # When it was measured and the load then: a benchmark run alone into an older report says so.
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    results[benchmark] = {**result, "at": datetime.now(UTC).isoformat(timespec="minutes"), "load": load}
    target.write_text(json.dumps(results, indent=2, sort_keys=True))


def run_on_service_loop(main: Coroutine[Any, Any, T]) -> T:
    """Run an in-process benchmark on the event loop the services run on (BENCH_EVENT_LOOP,
    default uvloop, as `AURORA_EVENT_LOOP`): the service's code and its raw nats-py baseline
    share that loop, so the ratio compares like with like."""
    with asyncio.Runner(loop_factory=loop_factory(os.environ.get("BENCH_EVENT_LOOP", "uvloop"))) as runner:
        return runner.run(main)


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return int(value) if value else default


@dataclass(frozen=True)
class Result:
    name: str
    count: int
    seconds: float
    stored: dict[str, float] = field(default_factory=dict)  # messages stored per unit, by stream

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds > 0 else float("inf")


class Stopwatch:
    """`with Stopwatch() as sw: …` then `sw.seconds` (monotonic, high resolution)."""

    def __enter__(self) -> Stopwatch:
        self._start = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *_: object) -> None:
        self.seconds = time.perf_counter() - self._start


async def until(done: Callable[[], bool], *, timeout: float, what: str, interval: float = 0.005) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise TimeoutError(f"benchmark timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(interval)


def best(results: list[Result]) -> Result:
    """The fastest of several rounds: the least disturbed by whatever else the machine did."""
    return max(results, key=lambda r: r.rate)


def table(baseline: Result, measured: Result, *, goal: float) -> str:
    ratio = measured.rate / baseline.rate
    rows = [
        ("", "messages", "seconds", "msgs/s"),
        (baseline.name, f"{baseline.count:,}", f"{baseline.seconds:.3f}", f"{baseline.rate:,.0f}"),
        (measured.name, f"{measured.count:,}", f"{measured.seconds:.3f}", f"{measured.rate:,.0f}"),
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(widths[0]) if i == 0 else cell.rjust(widths[i])
                       for i, cell in enumerate(row)) for row in rows]
    verdict = "met" if ratio >= goal else "NOT met"
    lines.append(f"ratio: {ratio:.1%} of the raw rate (goal ≥ {goal:.0%}: {verdict})")
    return "\n".join(lines)
