"""Run a service module under cProfile timed by the process's CPU clock, on demand.

    python -m tests.bench.cpu_profiled /tmp/gateway.prof services.mcp_gateway

(the output first: the tests' `StackBuilder.launched_by` puts the service's module last).
SIGUSR1 starts profiling, SIGUSR2 stops it and writes the stats to the file given: the
benchmark profiles only the window under load, not the start-up. py-spy samples wall time
and counts a thread that is runnable but waiting for a CPU as busy, which on a shared 2-CPU
machine puts most of the samples on whatever system call preceded the wait (a socket
write); CPU-clock profiling does not.
"""

from __future__ import annotations

import cProfile
import runpy
import signal
import sys
import time
from types import FrameType


def main() -> None:
    output, module = sys.argv[1], sys.argv[2]
    profile = cProfile.Profile(time.process_time)

    def start(_signum: int, _frame: FrameType | None) -> None:
        profile.enable()

    def stop(_signum: int, _frame: FrameType | None) -> None:
        profile.disable()
        profile.dump_stats(output)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    sys.argv = [module]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
