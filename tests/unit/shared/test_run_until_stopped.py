"""`run_until_stopped` (shared/service.py) stops what a service began however its start or run
ended, and turns a start's foreign error into StartFailed (one line, exit 1 in run_service)."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from shared.errors import ConfigError
from shared.lifecycle import Lifecycle, StartFailed
from shared.service import run_until_stopped


class Service(Lifecycle[None]):
    """Two real parts that write to the journal; the second's start or the run may fail."""

    def __init__(self, journal: list[str], *, start_error: Exception | None = None,
                 run_error: Exception | None = None) -> None:
        super().__init__("the test service")
        self.journal = journal
        self.start_error = start_error
        self.run_error = run_error

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        self.journal.append("start first")
        parts.callback(self.journal.append, "stop first")
        if self.start_error is not None:
            raise self.start_error
        self.journal.append("start second")
        parts.callback(self.journal.append, "stop second")

    async def run(self, stop: asyncio.Event) -> None:
        self.require_started()
        if self.run_error is not None:
            raise self.run_error
        await stop.wait()


async def test_a_start_failing_half_way_stops_the_first_part_and_says_why() -> None:
    journal: list[str] = []
    with pytest.raises(StartFailed, match=r"start-up failed: OSError: port taken \(what had started was stopped\)"):
        await run_until_stopped(Service(journal, start_error=OSError("port taken")), asyncio.Event())
    assert journal == ["start first", "stop first"]


async def test_an_aurora_error_at_start_goes_on_as_it_is() -> None:
    journal: list[str] = []
    with pytest.raises(ConfigError, match="no such app"):
        await run_until_stopped(Service(journal, start_error=ConfigError("no such app")), asyncio.Event())
    assert journal == ["start first", "stop first"]


async def test_a_run_that_fails_stops_every_part_in_reverse_order() -> None:
    journal: list[str] = []
    with pytest.raises(RuntimeError, match="lost"):
        await run_until_stopped(Service(journal, run_error=RuntimeError("lost")), asyncio.Event())
    assert journal == ["start first", "start second", "stop second", "stop first"]


async def test_a_run_told_to_stop_stops_every_part() -> None:
    journal: list[str] = []
    stop = asyncio.Event()
    stop.set()
    await run_until_stopped(Service(journal), stop)
    assert journal == ["start first", "start second", "stop second", "stop first"]
