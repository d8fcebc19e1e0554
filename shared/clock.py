"""Time helpers: RFC 3339 timestamps with an explicit offset, as the envelope requires."""

from __future__ import annotations

import functools
import time
from datetime import UTC, datetime


# The last second `now_iso` wrote, as text up to the fraction. Why: every tool call stamps its
# reply and its audit record, and `datetime.now(UTC).isoformat()` took 6–7 µs of a call's path
# each time (measured in place in the gateway), where formatting the milliseconds onto a second
# already written takes a fraction of that. The cache (C, thread-safe) holds that one second.
@functools.lru_cache(maxsize=1)
def _second_text(second: int) -> str:
    return datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def now_iso() -> str:
    """Now in UTC to the millisecond, as `datetime.now(UTC).isoformat(timespec="milliseconds")`."""
    second, nanos = divmod(time.time_ns(), 1_000_000_000)
    return f"{_second_text(second)}.{nanos // 1_000_000:03d}+00:00"


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value)


def is_past(value: str, *, now: datetime | None = None) -> bool:
    return parse_iso(value) <= (now or datetime.now(UTC))
