"""`shared.wiring.Assembly`: parts start in their order and stop in reverse, a failed start stops
what had started (the failing part included, since it may have begun), `ready` runs after every
part, and `StartedBy` runs its factory at start, never at build."""

from __future__ import annotations

import asyncio

import pytest

from shared.wiring import Assembly, StartedBy


class Recorded:
    def __init__(self, name: str, log: list[str], *, fail: bool = False) -> None:
        self.name, self.log, self.fail = name, log, fail

    async def start(self) -> None:
        self.log.append(f"start {self.name}")
        if self.fail:
            raise RuntimeError(f"{self.name} cannot start")

    async def stop(self) -> None:
        self.log.append(f"stop {self.name}")


async def test_parts_start_in_order_and_stop_in_reverse() -> None:
    log: list[str] = []
    parts = [Recorded(n, log) for n in ("stores", "loop", "admin")]

    async def ready() -> None:
        log.append("ready")

    async with Assembly("svc", None, parts, ready=ready):
        log.append("serving")
    assert log == ["start stores", "start loop", "start admin", "ready", "serving",
                   "stop admin", "stop loop", "stop stores"]


async def test_a_failed_start_stops_what_had_started_and_runs_no_ready() -> None:
    log: list[str] = []
    parts = [Recorded("stores", log), Recorded("loop", log, fail=True), Recorded("admin", log)]

    async def ready() -> None:
        log.append("ready")

    service = Assembly("svc", None, parts, ready=ready)
    with pytest.raises(RuntimeError, match="loop cannot start"):
        await service.start()
    assert log == ["start stores", "start loop", "stop loop", "stop stores"]
    assert not service.started


async def test_run_waits_for_stop_unless_the_service_has_its_own_loop() -> None:
    stop = asyncio.Event()
    service = Assembly("svc", None, [])
    async with service:
        task = asyncio.create_task(service.run(stop))
        await asyncio.sleep(0)
        assert not task.done()
        stop.set()
        await task

    ran: list[bool] = []

    async def loop(event: asyncio.Event) -> None:
        ran.append(event is stop)

    async with Assembly("svc", None, [], run=loop) as own:
        await own.run(stop)
    assert ran == [True]


async def test_started_by_runs_its_factory_at_start_and_stops_what_it_returned() -> None:
    log: list[str] = []

    async def factory() -> Recorded:
        log.append("factory")
        return Recorded("micro", log)

    part = StartedBy("admin endpoints", factory)
    assert log == []
    async with part:
        assert log == ["factory"]
    assert log == ["factory", "stop micro"]
