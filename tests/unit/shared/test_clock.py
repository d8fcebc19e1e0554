"""`now_iso`: what `datetime.now(UTC).isoformat(timespec="milliseconds")` writes, at any instant."""

from __future__ import annotations

import random
import types
from datetime import UTC, datetime

import pytest

from shared import clock


def stamped_at(monkeypatch: pytest.MonkeyPatch, nanos: int) -> str:
    monkeypatch.setattr(clock, "time", types.SimpleNamespace(time_ns=lambda: nanos))
    return clock.now_iso()


def expected(nanos: int) -> str:
    second, rest = divmod(nanos, 1_000_000_000)
    instant = datetime.fromtimestamp(second, UTC).replace(microsecond=rest // 1000)
    return instant.isoformat(timespec="milliseconds")


def test_each_instant_is_written_as_datetime_writes_it(monkeypatch: pytest.MonkeyPatch) -> None:
    draw = random.Random(7)
    second = 1_796_428_800 * 1_000_000_000  # 2026-12-05T00:00:00Z
    instants = [second, second + 999_999_999, second + 1_000_000_000, second - 1, 0, 951_782_400 * 10**9]
    instants += [draw.randrange(0, 4_102_444_800 * 10**9) for _ in range(2_000)]  # up to the year 2100
    instants += [second + draw.randrange(0, 3 * 10**9) for _ in range(500)]  # the same few seconds again
    for nanos in instants:
        assert stamped_at(monkeypatch, nanos) == expected(nanos), nanos


def test_a_clock_stepped_back_is_written_as_it_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    later, earlier = 1_796_428_860 * 10**9 + 5_000_000, 1_796_428_800 * 10**9 + 7_000_000
    assert stamped_at(monkeypatch, later) == "2026-12-05T00:01:00.005+00:00"
    assert stamped_at(monkeypatch, earlier) == "2026-12-05T00:00:00.007+00:00"


def test_the_real_clock_reads_now() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    stamped = datetime.fromisoformat(clock.now_iso())
    assert stamped.tzinfo is not None and before <= stamped <= datetime.now(UTC)
