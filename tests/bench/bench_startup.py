"""`aurora --help` start-up: CPU and wall time of the whole command, best of BENCH_ROUNDS (10).

CPU time (user + system of the child) is what the lazy command table saves and is far less
disturbed by a busy machine than wall time; both are printed. Goal: under 0.25 s."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.bench.common import env_int, record

GOAL = 0.25
AURORA = Path(sys.executable).parent / "aurora"


def one_run() -> tuple[float, float]:
    started = time.perf_counter()
    process = subprocess.Popen([str(AURORA), "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("aurora --help failed")
    return usage.ru_utime + usage.ru_stime, wall


def main() -> int:
    runs = [one_run() for _ in range(env_int("BENCH_ROUNDS", 10))]
    cpu, wall = min(r[0] for r in runs), min(r[1] for r in runs)
    verdict = "met" if cpu <= GOAL else "NOT met"
    print(f"aurora --help: {cpu:.3f} s CPU, {wall:.3f} s wall (best of {len(runs)}; goal CPU ≤ {GOAL} s: {verdict})")
    record("startup", {"cpu_s": cpu, "wall_s": wall, "goal_s": GOAL})
    return 0 if cpu <= GOAL else 1


if __name__ == "__main__":
    sys.exit(main())
