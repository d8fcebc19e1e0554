"""Retried messages said in one log line per reason, with their count, instead of one line each:
while a stream leader was away, each failed batch of publishes logged a warning per message."""

from __future__ import annotations

import time

from shared.observability.logs import get_logger

log = get_logger("aurora.consumer")
RETRIES_SAID_EVERY = 5.0  # a consumer's retried messages are said at most this often, with their count


class UnsaidRetries:
    """Messages retried and not said yet, by reason: said together, with their count and a few
    subjects, at most every `RETRIES_SAID_EVERY` seconds."""

    def __init__(self, consumer: str) -> None:
        self._consumer = consumer
        self._by_reason: dict[str, tuple[int, set[str]]] = {}
        self._said_at = float("-inf")

    def add(self, reason: str, subject: str) -> None:
        count, subjects = self._by_reason.get(reason, (0, set()))
        self._by_reason[reason] = (count + 1, subjects | {subject})

    def say(self, *, when_due: bool = False) -> None:
        """What is held back; with `when_due`, only once `RETRIES_SAID_EVERY` has passed since the
        last time."""
        if not self._by_reason or (when_due and time.monotonic() - self._said_at < RETRIES_SAID_EVERY):
            return
        for reason, (count, subjects) in self._by_reason.items():
            log.warning("messages will be retried", consumer=self._consumer, count=count, error=reason,
                        subjects=sorted(subjects)[:5])
        self._by_reason.clear()
        self._said_at = time.monotonic()
