"""`make profile-e2e`: where each service's CPU goes per event on the path of `make bench-e2e`.

Every service of the event → reply path runs under cProfile on its process's CPU clock
(tests/bench/cpu_profiled.py), switched on only once the stack is warm; then BENCH_BURST events
(default 1000) are sent at once, BENCH_ROUNDS times (default 3), and each service's top functions
are printed in µs of CPU per event, with its Python function calls per event (the figure to
compare before and after a change on a shared machine: it does not depend on the load).
BENCH_PROFILE_SERVICES picks the services (comma-separated tags; default all five). The
profiles (`<tag>.prof`, for `python -m pstats`) stay in $BENCH_PROFILE_DIR when it is set.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import tempfile
from collections.abc import Callable
from pathlib import Path

from tests.bench.bench_e2e import aurora_services, burst, chat_driver, sequential
from tests.bench.common import env_int
from tests.bench.profile import cpu_summary, unwatch
from tests.bench.resources import cpu_seconds
from tests.bench.stacks import bench_stack
from tests.harness.stack import StackBuilder

SERVICES = ("bridge", "router", "runner", "gateway", "supervisor")


def profiled(folder: Path, tags: tuple[str, ...]) -> Callable[[StackBuilder], StackBuilder]:
    declare = aurora_services(folder)

    def with_profiler(builder: StackBuilder) -> StackBuilder:
        builder = declare(builder)
        for tag in tags:
            builder = builder.launched_by(tag, "tests.bench.cpu_profiled", str(folder / f"{tag}.prof"))
        return builder

    return with_profiler


def _keep(folder: Path, keep: Path, tags: tuple[str, ...]) -> None:
    keep.mkdir(parents=True, exist_ok=True)
    for tag in tags:
        shutil.copy(folder / f"{tag}.prof", keep / f"{tag}.prof")
    print(f"\nprofiles kept in {keep}")


async def main() -> int:
    n_burst = env_int("BENCH_BURST", 1000)
    rounds = env_int("BENCH_ROUNDS", 3)
    tags = tuple(t for t in os.environ.get("BENCH_PROFILE_SERVICES", ",".join(SERVICES)).split(",") if t)
    with tempfile.TemporaryDirectory(prefix="aurora-profile-e2e-") as tmp, \
            bench_stack(Path(tmp), profiled(Path(tmp), tags)) as stack:
        nc, replies, send = await chat_driver(stack.url)
        await sequential("warm-up", send, replies, 50)
        pids = {tag: stack[tag].pid for tag in tags}
        before = {tag: cpu_seconds(pid) for tag, pid in pids.items()}
        for pid in pids.values():
            os.kill(pid, signal.SIGUSR1)
        rates = [(await burst("aurora", send, replies, n_burst)).rate for _ in range(rounds)]
        events = n_burst * rounds
        cpu = {tag: (cpu_seconds(pid) - before[tag]) * 1000 / events for tag, pid in pids.items()}
        for tag, pid in pids.items():
            unwatch("cpu", pid, None, Path(tmp) / f"{tag}.prof", 30)
        await nc.close()
        print(f"profile of the event → reply path: {events:,} events in bursts of {n_burst}, "
              f"{', '.join(f'{r:,.0f}' for r in rates)} events/s under the profiler")
        print("CPU ms per event (profiled): " + ", ".join(f"{tag} {ms:.2f}" for tag, ms in cpu.items()))
        for tag in tags:
            print(f"\n{tag}:")
            print("\n".join(line.replace("per tool call", "per event").replace("per call", "per event")
                            for line in cpu_summary(Path(tmp) / f"{tag}.prof", events)))
        if keep := os.environ.get("BENCH_PROFILE_DIR"):
            _keep(Path(tmp), Path(keep), tags)
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
