"""Time helpers: RFC 3339 timestamps with an explicit offset, as the envelope requires."""

from __future__ import annotations

from datetime import UTC, datetime


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def parse_iso(value: str) -> datetime:
    return datetime.fromisoformat(value)


def is_past(value: str, *, now: datetime | None = None) -> bool:
    return parse_iso(value) <= (now or datetime.now(UTC))
