"""The one lifecycle (shared/lifecycle.py): start once, stop once in reverse order, a failed start
unwound, a part used before start named in a typed error."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from shared.lifecycle import Lifecycle, NotStarted


class Piece:
    """A real long-lived piece: it writes to the journal when it starts and when it stops."""

    def __init__(self, name: str, journal: list[str], *, fails: bool = False) -> None:
        self.name = name
        self.journal = journal
        self.fails = fails

    async def start(self) -> None:
        await asyncio.sleep(0)  # a real start awaits something: a concurrent start may come in here
        if self.fails:
            raise OSError(f"{self.name} cannot start")
        self.journal.append(f"start {self.name}")

    async def stop(self) -> None:
        self.journal.append(f"stop {self.name}")


class Assembly(Lifecycle[dict[str, Piece]]):
    def __init__(self, pieces: list[Piece]) -> None:
        super().__init__()
        self.pieces = pieces
        self.starts = 0

    async def _start(self, parts: contextlib.AsyncExitStack) -> dict[str, Piece]:
        self.starts += 1
        for piece in self.pieces:
            await piece.start()
            parts.push_async_callback(piece.stop)
        return {piece.name: piece for piece in self.pieces}


async def test_start_then_stop_in_reverse_order() -> None:
    journal: list[str] = []
    assembly = Assembly([Piece("a", journal), Piece("b", journal), Piece("c", journal)])
    await assembly.start()
    assert assembly.require_started()["b"].name == "b"
    await assembly.stop()
    assert journal == ["start a", "start b", "start c", "stop c", "stop b", "stop a"]


async def test_a_failed_start_stops_what_had_started_newest_first_and_raises_its_error() -> None:
    journal: list[str] = []
    assembly = Assembly([Piece("a", journal), Piece("b", journal), Piece("c", journal, fails=True),
                         Piece("d", journal)])
    with pytest.raises(OSError, match="c cannot start"):
        await assembly.start()
    assert journal == ["start a", "start b", "stop b", "stop a"]
    assert not assembly.started
    await assembly.stop()  # nothing left to stop
    assert journal == ["start a", "start b", "stop b", "stop a"]


async def test_a_stop_that_fails_while_unwinding_does_not_hide_the_start_error() -> None:
    journal: list[str] = []

    class BrokenStop(Piece):
        async def stop(self) -> None:
            raise RuntimeError("stop broke")

    assembly = Assembly([Piece("a", journal), BrokenStop("b", journal), Piece("c", journal, fails=True)])
    with pytest.raises(OSError, match="c cannot start"):
        await assembly.start()
    assert journal == ["start a", "start b", "stop a"]  # a is stopped all the same


async def test_start_and_stop_are_idempotent_even_when_concurrent() -> None:
    journal: list[str] = []
    assembly = Assembly([Piece("a", journal)])
    await asyncio.gather(assembly.start(), assembly.start(), assembly.start())
    await assembly.start()
    assert assembly.starts == 1
    await asyncio.gather(assembly.stop(), assembly.stop())
    await assembly.stop()
    assert journal == ["start a", "stop a"]


async def test_it_may_start_again_after_a_stop() -> None:
    journal: list[str] = []
    assembly = Assembly([Piece("a", journal)])
    await assembly.start()
    await assembly.stop()
    await assembly.start()
    assert assembly.started
    await assembly.stop()
    assert journal == ["start a", "stop a", "start a", "stop a"]


async def test_use_before_start_and_after_stop_raises_a_typed_error_naming_the_part() -> None:
    assembly = Assembly([])
    with pytest.raises(NotStarted, match="Assembly used before start") as caught:
        assembly.require_started()
    assert caught.value.part == "Assembly"
    await assembly.start()
    assert assembly.require_started() == {}
    await assembly.stop()
    with pytest.raises(NotStarted):
        assembly.require_started()


async def test_named_part() -> None:
    class Named(Lifecycle[None]):
        async def _start(self, parts: contextlib.AsyncExitStack) -> None:
            return None

    with pytest.raises(NotStarted, match="the tick consumer used before start"):
        Named("the tick consumer").require_started()


async def test_async_context_manager_starts_and_stops() -> None:
    journal: list[str] = []
    async with Assembly([Piece("a", journal), Piece("b", journal)]) as assembly:
        assert assembly.started
        assert journal == ["start a", "start b"]
    assert journal == ["start a", "start b", "stop b", "stop a"]
    assert not assembly.started
