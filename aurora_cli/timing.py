"""Times as the CLI and the console show them: ISO 8601 times read leniently, and spans of time
short enough to read at a glance."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def when(value: Any) -> datetime | None:
    """An ISO 8601 time (naive: UTC), or None when there is none or it cannot be read."""
    if not value:
        return None
    try:
        at = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def duration(seconds: float | None) -> str:
    """A span of seconds as `2d3h`, `1h5m`, `4m10s` or `9s`; '-' for none."""
    if seconds is None:
        return "-"
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    if days:
        return f"{days}d{hours}h"
    if hours:
        return f"{hours}h{minutes}m"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def took(started: Any, finished: Any) -> str | None:
    """How long from `started` to `finished` (ISO times): `38 ms`, `2.4 s`, `3m12s`; None when
    either is missing or unreadable."""
    start, end = when(started), when(finished)
    if start is None or end is None:
        return None
    seconds = max((end - start).total_seconds(), 0.0)
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    return f"{seconds:.1f} s" if seconds < 60 else duration(seconds)
