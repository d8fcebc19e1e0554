"""`AURORA_TRACEMALLOC=1`: off by default; on, SIGUSR2's report names what grew since the last one."""

from __future__ import annotations

import asyncio
import os
import signal
import tracemalloc

from shared.config.settings import load_settings
from shared.observability import memwatch


def test_off_unless_the_variable_is_1() -> None:
    loop = asyncio.new_event_loop()
    try:
        assert memwatch.install(loop, load_settings({}).tracemalloc) is None
        assert memwatch.install(loop, load_settings({"AURORA_TRACEMALLOC": "0"}).tracemalloc) is None
        assert not tracemalloc.is_tracing()
    finally:
        loop.close()


async def test_sigusr2_reports_the_site_that_grew() -> None:
    watch = memwatch.install(asyncio.get_running_loop(), load_settings({"AURORA_TRACEMALLOC": "1"}).tracemalloc)
    assert watch is not None
    reported = asyncio.Event()
    lines: list[str] = []
    report = watch.report

    def noted() -> list[str]:
        lines.extend(report())
        reported.set()
        return lines

    watch.report = noted  # type: ignore[method-assign]
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR2, watch.report)
    try:
        kept = [bytearray(1024) for _ in range(2000)]  # 2 MiB allocated here, between two reports
        os.kill(os.getpid(), signal.SIGUSR2)
        await asyncio.wait_for(reported.wait(), 30)
    finally:
        asyncio.get_running_loop().remove_signal_handler(signal.SIGUSR2)
        tracemalloc.stop()
    assert len(kept) == 2000
    assert lines and "test_memwatch.py" in lines[0] and lines[0].startswith("+"), lines[:3]
