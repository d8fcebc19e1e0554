"""An app's events, sent to the gateway until it confirms them stored.

An app's notification (an `aurora/event`, a `list_changed`, any vendor notification) becomes a
signal at the gateway, which stores it in JetStream. On its way there it crosses core NATS,
which delivers at most once: a line forwarded to a NATS node that dies before delivering it, or
a gateway that dies before its signal is stored, loses the event with nobody told. So each such
line goes out with a token (`RECEIPT_HEADER`), and is sent again, with the same token, until the
gateway confirms its signal stored (an empty message with that header on `….rcpt`), for
`PATIENCE_SECONDS` at most. The gateway makes the signal's id from the token, so JetStream drops
the copies of one it stored already (docs/design.md, "An app's event is confirmed once stored").

Protocol plumbing (`PLUMBING_NOTIFICATIONS`: progress, cancellation) is no event and gets no
token. This module is the bookkeeping; `services.app_supervisor.relay.stdio` does the sending.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from services.app_supervisor.framing import head_of
from shared.contracts.signals import PLUMBING_NOTIFICATIONS

# How long a line waits for its confirmation before it is sent again (then at pauses doubling
# up to `LAST_PAUSE`), and how long it is sent at all.
FIRST_PAUSE, LAST_PAUSE = 1.0, 4.0
PATIENCE_SECONDS = 120.0
# The shortest wait between two rounds of copies: lines falling due meanwhile go together. A
# flood of events nobody confirms made a line due every few microseconds, and each round goes
# over every waiting line (23 ms with 47,000 of them): the supervisor spent its CPU there.
ROUND_EVERY = 0.25
# Lines waiting for their confirmation, in bytes at most (the oldest are given up past it).
WAITING_BYTES = 8 * 1024 * 1024


def wants_receipt(line: bytes) -> bool:
    """A notification that becomes an event: not a response, not a request, not plumbing."""
    if b'"method"' not in line:  # the cheap test first: an answer to a call fails it
        return False
    message = head_of(line)
    return (message is not None and message.method is not None and message.id is None
            and message.method not in PLUMBING_NOTIFICATIONS)


@dataclass
class _Unconfirmed:
    line: bytes
    first_sent: float
    next_send: float
    pause: float


class Receipts:
    """Lines sent and not yet confirmed, by token, oldest first."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, first_pause: float = FIRST_PAUSE,
                 last_pause: float = LAST_PAUSE, patience: float = PATIENCE_SECONDS,
                 max_bytes: int = WAITING_BYTES, round_every: float = ROUND_EVERY) -> None:
        self._clock = clock
        self._round_every = round_every
        self._first_pause = first_pause
        self._last_pause = last_pause
        self._patience = patience
        self._max_bytes = max_bytes
        # Unique to this generation of this process: a token never names two lines, even in
        # the signal ids JetStream keeps.
        self._prefix = uuid.uuid4().hex[:16]
        self._numbers = itertools.count(1)
        self._waiting: OrderedDict[str, _Unconfirmed] = OrderedDict()
        self._bytes = 0
        self.given_up = 0  # past their patience or the byte limit, never confirmed

    def new(self, line: bytes) -> str:
        """A line about to be sent for the first time: its token."""
        token = f"{self._prefix}.{next(self._numbers)}"
        now = self._clock()
        self._waiting[token] = _Unconfirmed(line, now, now + self._first_pause, self._first_pause)
        self._bytes += len(line)
        while self._bytes > self._max_bytes and self._waiting:
            self._drop(next(iter(self._waiting)))
        return token

    def confirmed(self, token: str) -> bool:
        """The gateway stored the line's signal. False: not a line waiting here."""
        if token not in self._waiting:
            return False
        self._bytes -= len(self._waiting.pop(token).line)
        return True

    def due(self) -> list[tuple[str, bytes]]:
        """The lines to send again now, oldest first; those past their patience are given up."""
        now = self._clock()
        again = []
        for token, waiting in list(self._waiting.items()):
            if now - waiting.first_sent > self._patience:
                self._drop(token)
            elif now >= waiting.next_send:
                waiting.pause = min(waiting.pause * 2, self._last_pause)
                waiting.next_send = now + waiting.pause
                again.append((token, waiting.line))
        return again

    def next_due(self) -> float | None:
        """Seconds until the next round of copies (None: none waits): when the first line is due
        again, and at least `round_every` from now."""
        if not self._waiting:
            return None
        return max(self._round_every, min(w.next_send for w in self._waiting.values()) - self._clock())

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def _drop(self, token: str) -> None:
        self._bytes -= len(self._waiting.pop(token).line)
        self.given_up += 1
