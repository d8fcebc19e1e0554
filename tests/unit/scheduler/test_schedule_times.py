"""Next-tick computation (shared/schedule_times.py): intervals on the epoch, cron on a zone's wall
clock, and the two DST rules (a skipped wall time fires once after the gap, a repeated one fires
once, at its first occurrence)."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from shared.schedule_times import Cadence, ScheduleSpecError, iso, parse_every, parse_iso, six_fields

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


def ticks(cadence: Cadence, start: datetime, n: int) -> list[str]:
    found = []
    for tick in cadence.ticks_after(start):
        found.append(iso(tick))
        if len(found) == n:
            return found
    return found


@pytest.mark.parametrize(("text", "seconds"), [("1s", 1), ("90s", 90), ("5m", 300), ("1h30m", 5400), ("2d", 172800),
                                               ("1d1h1m1s", 90061)])
def test_intervals(text: str, seconds: int) -> None:
    assert parse_every(text) == seconds


@pytest.mark.parametrize("text", ["", "0s", "5", "1.5s", "5 minutes", "-1s", "367d", "1m1h"])
def test_bad_intervals_say_how_to_write_one(text: str) -> None:
    with pytest.raises(ScheduleSpecError, match=r"every|interval"):
        parse_every(text)


def test_an_interval_ticks_on_multiples_since_the_epoch() -> None:
    cadence = Cadence(every_seconds=15 * 60)
    assert ticks(cadence, utc(2026, 5, 1, 10, 7, 30), 3) == [
        "2026-05-01T10:15:00.000Z", "2026-05-01T10:30:00.000Z", "2026-05-01T10:45:00.000Z"]
    # strictly after: a start exactly on a tick gives the next one
    assert ticks(cadence, utc(2026, 5, 1, 10, 15), 1) == ["2026-05-01T10:15:00.000Z".replace("15:00", "30:00")]


def test_five_six_and_named_cron() -> None:
    assert six_fields("30 2 * * *") == "0 30 2 * * *"
    assert six_fields("*/2 * * * * *") == "*/2 * * * * *"
    assert six_fields("@hourly") == "0 0 * * * *"
    assert six_fields("0 9 * * mon-fri") == "0 0 9 * * mon-fri"


@pytest.mark.parametrize(("expression", "reason"), [
    ("* * *", "5 fields"), ("61 * * * *", "not a valid cron"), ("0 0 L * *", "syntax plain cron"),
    ("0 0 ? * 1#2", "syntax plain cron"), ("0 0 * * * * *", "5 fields"),
])
def test_bad_cron_is_refused_with_the_reason(expression: str, reason: str) -> None:
    with pytest.raises(ScheduleSpecError, match=reason):
        six_fields(expression)


def test_cron_is_read_on_the_zones_wall_clock() -> None:
    cadence = Cadence(cron=six_fields("0 9 * * *"), zone="Asia/Shanghai")
    assert ticks(cadence, utc(2026, 1, 1), 2) == ["2026-01-01T01:00:00.000Z", "2026-01-02T01:00:00.000Z"]


def test_a_wall_time_skipped_by_spring_forward_fires_once_after_the_gap() -> None:
    # Europe/Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist that day.
    cadence = Cadence(cron=six_fields("30 2 * * *"), zone="Europe/Berlin")
    found = ticks(cadence, datetime(2026, 3, 27, 12, tzinfo=BERLIN), 4)
    assert found == ["2026-03-28T01:30:00.000Z",  # 02:30 CET
                     "2026-03-29T01:00:00.000Z",  # 03:00 CEST, the first instant after the gap
                     "2026-03-30T00:30:00.000Z",  # 02:30 CEST
                     "2026-03-31T00:30:00.000Z"]


def test_a_wall_time_repeated_by_fall_back_fires_once() -> None:
    # Europe/Berlin, 2026-10-25: 03:00 CEST goes back to 02:00 CET; 02:30 happens twice.
    cadence = Cadence(cron=six_fields("30 2 * * *"), zone="Europe/Berlin")
    found = ticks(cadence, datetime(2026, 10, 24, 12, tzinfo=BERLIN), 3)
    assert found == ["2026-10-25T00:30:00.000Z",  # 02:30 CEST, the first occurrence only
                     "2026-10-26T01:30:00.000Z",  # 02:30 CET
                     "2026-10-27T01:30:00.000Z"]


def test_hourly_through_the_repeated_hour_keeps_each_wall_time_once() -> None:
    # America/New_York, 2026-11-01: 02:00 EDT goes back to 01:00 EST.
    cadence = Cadence(cron=six_fields("0 * * * *"), zone="America/New_York")
    found = ticks(cadence, datetime(2026, 11, 1, 0, 30, tzinfo=NEW_YORK), 3)
    assert found == ["2026-11-01T05:00:00.000Z",  # 01:00 EDT
                     "2026-11-01T07:00:00.000Z",  # 02:00 EST (01:00 EST, a repeat, is not a tick)
                     "2026-11-01T08:00:00.000Z"]


def test_ticks_between_are_bounded_and_ordered() -> None:
    cadence = Cadence(every_seconds=1)
    found = cadence.ticks_between(utc(2026, 1, 1, 0, 0, 0), utc(2026, 1, 1, 0, 0, 5), limit=10)
    assert [t.second for t in found] == [1, 2, 3, 4, 5]
    assert len(cadence.ticks_between(utc(2026, 1, 1), utc(2026, 1, 2), limit=3)) == 3


def test_iso_round_trips_in_utc() -> None:
    moment = datetime(2026, 3, 29, 3, 0, 0, 250_000, tzinfo=BERLIN)
    assert iso(moment) == "2026-03-29T01:00:00.250Z"
    assert parse_iso(iso(moment)) == moment
