"""Failures of one operation a loop repeats (a fetch, a heartbeat), said as a streak.

While NATS or a stream leader is away, a loop that tries again every half second logged a warning
at every attempt: 22 lines per consumer in the two seconds a cluster took to elect a new leader.
A streak is said when it begins (warning), at most every `every` seconds while it lasts, with the
count and the last error (warning), and once when the operation works again (info), so that an
operator reads when the trouble began, that it goes on, and when it ended. With `quiet_start`
the caller has said the beginning in its own words (a lost connection's warning), so the first
failure is counted and not said again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from shared.observability.logs import Log

SAID_EVERY = 10.0


class FailureStreak:
    def __init__(self, log: Log, what: str, *, every: float = SAID_EVERY, quiet_start: bool = False,
                 clock: Callable[[], float] = time.monotonic, **fields: Any) -> None:
        self._log = log
        self._what = what
        self._every = every
        self._quiet_start = quiet_start
        self._clock = clock
        self._fields = fields  # what names the operation in every line (e.g. the consumer)
        self.failures = 0
        self._began = 0.0
        self._said_at = 0.0

    def failed(self, error: BaseException) -> None:
        now = self._clock()
        self.failures += 1
        name, text = type(error).__name__, str(error)
        reason = text if name in text else f"{name}: {text}" if text else name
        if self.failures == 1:
            self._began = self._said_at = now
            if not self._quiet_start:
                self._log.warning(f"{self._what} failed", error=reason, **self._fields)
        elif now - self._said_at >= self._every:
            self._said_at = now
            self._log.warning(f"{self._what} still failing", failures=self.failures,
                              seconds=round(now - self._began, 1), error=reason, **self._fields)

    def worked(self) -> None:
        if not self.failures:
            return
        self._log.info(f"{self._what} works again", failures=self.failures,
                       seconds=round(self._clock() - self._began, 1), **self._fields)
        self.failures = 0

    def forget(self) -> None:
        """The streak ended and the caller said so in its own words."""
        self.failures = 0
