"""When a schedule ticks: pure functions over cron expressions (in a time zone) and intervals.

The scheduler computes every tick itself with these functions and hands JetStream only the
next one, as a one-shot `Nats-Schedule: @at <UTC time>` timer (services/scheduler). So what
these functions say is exactly when events happen, and they are what the DST tests check.

Rules:
- `every: 90s` ticks at the multiples of the interval since the Unix epoch (UTC): every
  instance of the scheduler, and every restart, agrees on the tick times without talking.
- `cron` (5 fields `min hour dom month dow`, 6 fields with seconds first, or `@hourly`,
  `@daily` …) is read in the schedule's IANA time zone, on the wall clock:
  - a wall time that does not exist (the hour skipped when clocks go forward) fires once, at
    the first instant after the gap (02:30 on the spring-forward day fires at 03:00);
  - a wall time that happens twice (the hour repeated when clocks go back) fires once, at its
    first occurrence.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from shared.errors import AuroraError

MAX_EVERY_SECONDS = 366 * 24 * 3600
_EVERY = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_PREDEFINED = {
    "@yearly": "0 0 0 1 1 *", "@annually": "0 0 0 1 1 *", "@monthly": "0 0 0 1 * *",
    "@weekly": "0 0 0 * * 0", "@daily": "0 0 0 * * *", "@midnight": "0 0 0 * * *",
    "@hourly": "0 0 * * * *",
}
# Plain cron only: numbers, names, `*`, ranges, lists and steps. Extensions some cron dialects
# have (`L`, `W`, `#`, `?`, `H`) are refused rather than read one way here and another elsewhere.
_FIELD = re.compile(r"^[0-9A-Za-z*,/-]+$")
_TOKEN = re.compile(r"^(?:\*|[0-9]+|[A-Za-z]{3})$")  # between `,`, `-` and `/`: a number, `*` or a name


class ScheduleSpecError(AuroraError, ValueError):
    """A cron expression, time zone or interval that cannot be used; the message says why."""


def parse_every(text: str) -> int:
    """`30s`, `5m`, `1h30m`, `2d` → seconds (at least 1, at most 366 days)."""
    match = _EVERY.fullmatch(text.strip()) if text.strip() else None
    if match is None:
        raise ScheduleSpecError(f"every {text!r}: write an interval like 30s, 5m, 1h30m or 1d")
    days, hours, minutes, seconds = (int(g) if g else 0 for g in match.groups())
    total = ((days * 24 + hours) * 60 + minutes) * 60 + seconds
    if not 1 <= total <= MAX_EVERY_SECONDS:
        raise ScheduleSpecError(f"every {text!r}: the interval must be from 1s to 366d")
    return total


def six_fields(expression: str) -> str:
    """The expression as 6 fields (seconds first); ScheduleSpecError if it is not valid cron."""
    text = " ".join(expression.split())
    text = _PREDEFINED.get(text.lower(), text)
    fields = text.split(" ")
    if len(fields) == 5:
        fields = ["0", *fields]
    if len(fields) != 6:
        raise ScheduleSpecError(
            f"cron {expression!r}: write 5 fields (minute hour day-of-month month day-of-week), "
            f"6 with seconds first, or one of {', '.join(sorted(_PREDEFINED))}")
    for name, field in zip(("second", "minute", "hour", "day-of-month", "month", "day-of-week"), fields,
                           strict=True):
        if not _FIELD.fullmatch(field) or not all(_TOKEN.fullmatch(t) for t in re.split(r"[,/-]", field)):
            raise ScheduleSpecError(f"cron {expression!r}: the {name} field {field!r} uses syntax "
                                    "plain cron does not have (only numbers, names, *, -, , and /)")
    six = " ".join(fields)
    if not croniter.is_valid(six, second_at_beginning=True):
        raise ScheduleSpecError(f"cron {expression!r}: not a valid cron expression")
    return six


def zone(name: str) -> ZoneInfo:
    """The IANA time zone `name` (`Europe/Berlin`, `UTC`); ScheduleSpecError if unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleSpecError(f"timezone {name!r} is not an IANA time zone name (e.g. Europe/Berlin)") from exc


@dataclass(frozen=True)
class Cadence:
    """A schedule's timing alone: a cron expression in a zone, or an interval."""

    cron: str | None = None  # 6 fields
    zone: str = "UTC"
    every_seconds: int | None = None

    def __post_init__(self) -> None:
        if (self.cron is None) == (self.every_seconds is None):
            raise ScheduleSpecError("a cadence is a cron expression or an interval, exactly one")

    def next_after(self, moment: datetime) -> datetime:
        """The first tick strictly after `moment` (an aware datetime), in UTC."""
        return next(self.ticks_after(moment))

    def ticks_after(self, moment: datetime) -> Iterator[datetime]:
        """Every tick strictly after `moment`, in order, in UTC."""
        if moment.tzinfo is None:
            raise ValueError("moment must be timezone-aware")
        if self.every_seconds is not None:
            step = self.every_seconds
            index = int(moment.timestamp() // step) + 1
            while True:
                yield datetime.fromtimestamp(index * step, UTC)
                index += 1
        yield from self._cron_after(moment)

    def _cron_after(self, moment: datetime) -> Iterator[datetime]:
        assert self.cron is not None
        tz = zone(self.zone)
        local = moment.astimezone(tz)
        # Start from the wall time, not the instant: croniter walks wall times in `tz`.
        it = croniter(self.cron, local, second_at_beginning=True)
        previous_wall: datetime | None = None
        last = moment
        while True:
            found: datetime = it.get_next(datetime)
            wall = found.replace(tzinfo=None)
            instant = found.astimezone(UTC)
            if previous_wall is not None and wall == previous_wall:
                continue  # the repeated hour: this wall time already fired
            previous_wall = wall
            if instant <= last:
                continue  # a step back through the repeated hour is never a new tick
            last = instant
            yield instant

    def ticks_between(self, after: datetime, until: datetime, *, limit: int) -> list[datetime]:
        """The ticks in (`after`, `until`], at most `limit` of them (the earliest)."""
        found: list[datetime] = []
        for tick in self.ticks_after(after):
            if tick > until or len(found) >= limit:
                break
            found.append(tick)
        return found


def iso(moment: datetime) -> str:
    """UTC, milliseconds, `Z`: the form tick times travel in (and the server's `@at` takes)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def parse_iso(text: str) -> datetime:
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        raise ValueError(f"{text!r} has no UTC offset")
    return parsed.astimezone(UTC)
