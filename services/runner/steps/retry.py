"""Waiting for a target that is not there (pure): when to try again, and when to stop waiting.

A call answered `unavailable` (nothing was sent to the target) or a model that cannot be
reached did nothing, so nothing forbids trying again. The task is parked `queued` with a
`RetryWait` and its run message is nak'd with the delay `plan` gives; the redelivered message
resumes the task from its step log. Each wait doubles (from `base`, at most `cap`, plus a
little jitter so that a fleet of waiting runs does not come back in one burst), never sooner
than a `Retry-After` the target sent, and the last one ends exactly at the deadline: the earlier
of the event's `expire_at` and `since + retry_unavailable_seconds`. Only a call still
unavailable at the deadline ends the task.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from shared.contracts.task import RetryWait, Task

JITTER = 0.2  # at most this fraction is added to a wait


@dataclass(frozen=True)
class Backoff:
    base: float = 1.0
    cap: float = 30.0


@dataclass(frozen=True)
class Plan:
    """Wait `delay` seconds (`wait` is what the task records), or give up (`wait` None)."""

    wait: RetryWait | None
    delay: float
    tries: int
    since: str


def delay_for(tries: int, backoff: Backoff, *, key: str = "") -> float:
    """Seconds before try `tries + 1`, after `tries` (≥ 1) tries found the target unavailable."""
    plain = min(backoff.base * 2.0 ** max(tries - 1, 0), backoff.cap)
    spread = (zlib.crc32(f"{key}:{tries}".encode()) % 1000) / 1000  # deterministic per task and try
    return plain * (1 + JITTER * spread)


def deadline(since: datetime, limit_seconds: float, expire_at: str | None) -> datetime:
    """The earlier of `since + limit_seconds` and the event's expiry (when it has a readable one)."""
    until = since + timedelta(seconds=limit_seconds)
    expiry = parse_time(expire_at)
    return min(until, expiry) if expiry is not None else until


def plan(task: Task, *, step: str, code: str, message: str, now: datetime, limit_seconds: float,
         expire_at: str | None, backoff: Backoff, retry_after: float | None = None) -> Plan:
    """The next wait of `task`'s step that found its target unavailable at `now`. The same step
    waiting again continues its wait (same `since`, one more try); another step starts one."""
    previous = task.retry
    same = previous is not None and previous.step == step
    since = parse_time(previous.since) if same and previous is not None else None
    start = since or now
    tries = (previous.tries if same and previous is not None else 0) + 1
    until = deadline(start, limit_seconds, expire_at)
    remaining = (until - now).total_seconds()
    if remaining <= 0:
        return Plan(wait=None, delay=0.0, tries=tries, since=_iso(start))
    delay = max(delay_for(tries, backoff, key=task.id), retry_after or 0.0)
    delay = min(delay, remaining)  # the last try is at the deadline, not after it
    wait = RetryWait(step=step, code=code, message=message, since=_iso(start), tries=tries,
                     next_try_at=_iso(now + timedelta(seconds=delay)), until=_iso(until),
                     wakes=(previous.wakes if previous is not None else 0) + 1)
    return Plan(wait=wait, delay=delay, tries=tries, since=_iso(start))


def failed_attempts(task: Task) -> int:
    """Attempts that count against `max_attempts`: resuming after a wait is not a failed attempt."""
    return task.attempts - (task.retry.wakes if task.retry is not None else 0)


def waiting_reason(wait: RetryWait) -> str:
    return (f"waiting to retry step {wait.step} ({wait.code}: {wait.message}): try {wait.tries} failed, "
            f"next try at {wait.next_try_at}, until {wait.until}")


def gave_up(step: str, code: str, message: str, tries: int, since: str) -> str:
    return (f"step {step} found its target unavailable {tries} time(s) since {since} and its deadline "
            f"passed ({code}: {message})")


def parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")  # as shared.clock.now_iso
