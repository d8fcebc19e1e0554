"""`AURORA_TRACEMALLOC=1`: where a service's memory goes, asked for while it runs.

Off by default (tracemalloc slows every allocation and keeps a trace of each). When on, the
service starts tracing at start-up and, on each SIGUSR2, logs the allocation sites that grew
most since the previous SIGUSR2 (the first one: since start-up), one `memory growth` line
with the top entries. A soak or a reproduction script signals the process twice, some load
apart, and reads what grew per call (`tests/bench/gateway_memory.py`).
"""

from __future__ import annotations

import asyncio
import signal
import tracemalloc

from shared.observability.logs import get_logger

log = get_logger("aurora.memwatch")
TOP = 15
FRAMES = 4  # enough to see whose cache a dict allocation is in, cheap enough to run under load


def growth(before: tracemalloc.Snapshot, after: tracemalloc.Snapshot, top: int = TOP) -> list[str]:
    """The `top` allocation sites by size growth, as lines a person reads (pure)."""
    ignored = [tracemalloc.Filter(False, tracemalloc.__file__),
               tracemalloc.Filter(False, "<frozen importlib._bootstrap>")]
    stats = after.filter_traces(ignored).compare_to(before.filter_traces(ignored), "traceback")
    lines = []
    for stat in stats[:top]:
        where = " <- ".join(f"{frame.filename.rsplit('/', 2)[-1]}:{frame.lineno}" for frame in stat.traceback)
        lines.append(f"{stat.size_diff / 1024:+.1f} KiB ({stat.count_diff:+d} blocks) {where}")
    return lines


class MemWatch:
    """Installed by `install()` when the variable is set; `report()` is what SIGUSR2 runs."""

    def __init__(self) -> None:
        tracemalloc.start(FRAMES)
        self._last = tracemalloc.take_snapshot()

    def report(self) -> list[str]:
        now = tracemalloc.take_snapshot()
        lines, self._last = growth(self._last, now), now
        current, peak = tracemalloc.get_traced_memory()
        log.info("memory growth", traced_kib=round(current / 1024), peak_kib=round(peak / 1024), top=lines)
        return lines


def install(loop: asyncio.AbstractEventLoop, on: bool) -> MemWatch | None:
    """Start tracing and answer SIGUSR2 when `on` (`Settings.tracemalloc`); else nothing at all."""
    if not on:
        return None
    watch = MemWatch()
    loop.add_signal_handler(signal.SIGUSR2, watch.report)
    log.info("tracemalloc on: SIGUSR2 logs the memory growth since the last one", frames=FRAMES)
    return watch
