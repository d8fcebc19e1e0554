"""The gateway's tool calls on the relay: each written to the app once, each answer kept for
the copies that may follow.

The gateway writes each of its own `tools/call` requests on `…c2s` with a reply subject of its
own, `<session inbox>.<request id>`, and writes the same request again while no answer came
(for `RESEND_WINDOW` seconds; a copy's `RESEND_HEADER` says when the first was sent): core NATS
delivers at most once, and a request or an answer forwarded to a NATS node that dies before
delivering it is lost with no 503 to say so. Sending again is made safe here, per app
generation (docs/design.md, "A call or an answer lost in flight is sent again"):

- a request is written to the app's stdin once; its copies are not written again;
- once the app answered it, a copy gets that answer again (kept `KEEP_SECONDS`, longer than a
  copy is sent; a copy older than `RESEND_WINDOW` is refused, as nothing may remember it);
- a copy of a request this generation never saw is written only when its session began here
  (its `initialize` came to this generation with the session's inbox as its reply subject): a
  call of a session with an earlier generation of the app may have run there, and must not run
  a second time in this one;
- a first request of a session that did not begin here is not written either: this process of
  the app never heard that session's `initialize` (the gateway's session still stands on an
  earlier process, gone). The gateway is told that nothing ran, and begins its session again
  once it hears of the new process.

A request is known by its reply subject, which is unique to the gateway's session. Everything
here is pure bookkeeping; `services.app_supervisor.relay.stdio` does the writing.
"""

from __future__ import annotations

import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import msgspec

from services.app_supervisor.framing import head_of
from shared.nats.bus import RESEND_WINDOW

# How long an answer is kept for a copy of its request: longer than copies are sent
# (`RESEND_WINDOW`), with room for the clocks of the gateway's and the supervisor's hosts.
KEEP_SECONDS = 120.0
# Answers kept, in bytes at most: past it the oldest answers' bytes go, not the record that
# they were answered (a copy of such a call is then dropped, never written again).
KEEP_BYTES = 16 * 1024 * 1024
# Requests written and not answered yet, at most: a call whose answer never comes (the gateway
# gave up on it and its cancel was lost too) must not be remembered without end.
MAX_WAITING = 100_000
# Sessions remembered per generation (each gateway session begins with an `initialize`).
MAX_SESSIONS = 64


class Copy(Enum):
    WRITE = "write"  # to the app's stdin: a request it has not had
    DROP = "drop"  # the app has it (or had it and its answer is gone): nothing to do
    REFUSE = "refuse"  # a copy that may have run elsewhere (an earlier generation) or been forgotten
    NOT_OURS = "not_ours"  # a first request of a session that did not begin with this generation


class _Cancel(msgspec.Struct):
    method: str | None = None
    params: dict[str, object] | None = None


_decode_cancel = msgspec.json.Decoder(_Cancel).decode


def session_of(reply: str) -> str:
    """A request's session: its reply subject without the last token (the request id)."""
    return reply.rpartition(".")[0]


@dataclass
class _Answered:
    line: bytes
    at: float


class RelayedCalls:
    """What one app generation was asked on its relay with a reply subject, and what it answered."""

    def __init__(self, clock: Callable[[], float] = time.time, *, keep: float = KEEP_SECONDS,
                 keep_bytes: int = KEEP_BYTES, max_waiting: int = MAX_WAITING) -> None:
        self._clock = clock
        self._keep = keep
        self._keep_bytes = keep_bytes
        self._max_waiting = max_waiting
        self._sessions: deque[str] = deque(maxlen=MAX_SESSIONS)
        self._sessions_forgotten = False  # more began than are kept: an unknown one may be one of them
        # Reply subjects written and not answered, oldest first (a copy of one is dropped), and
        # for this session's, request id -> reply subject, to know their answers by.
        self._written: OrderedDict[str, None] = OrderedDict()
        self._waiting: dict[str, str] = {}
        # reply subject -> its answer (empty: the gateway gave up on the call), oldest first
        self._answered: OrderedDict[str, _Answered] = OrderedDict()
        self._with_line: deque[str] = deque()  # the answers still holding their bytes, oldest first
        self._answered_bytes = 0
        self.forgotten = 0  # calls no longer remembered before their answer (past `max_waiting`)

    def session_began(self, reply: str | None) -> None:
        """An `initialize` came with `reply`: its session's calls may be sent again to this
        generation. An answer to a previous session's call can no longer be told from one to
        this session's (the ids start again), so none is kept; its copies are still dropped."""
        self._waiting.clear()
        if reply:
            self._sessions_forgotten |= len(self._sessions) == MAX_SESSIONS
            self._sessions.append(session_of(reply))

    def request(self, reply: str, first_sent: float | None) -> Copy | bytes:
        """A request with the reply subject `reply` came on c2s (`first_sent`: a copy, and when
        the gateway sent the first, in epoch seconds): write it, drop it, or send the app's
        answer (the bytes) again."""
        if reply in self._written:
            return Copy.DROP
        answered = self._answered.get(reply)
        if answered is not None:
            return answered.line or Copy.DROP
        if first_sent is not None and (self._clock() - first_sent > RESEND_WINDOW
                                       or session_of(reply) not in self._sessions):
            return Copy.REFUSE
        if first_sent is None and not self._sessions_forgotten and session_of(reply) not in self._sessions:
            return Copy.NOT_OURS
        self._waiting[reply.rpartition(".")[2]] = reply
        self._written[reply] = None
        while len(self._written) > self._max_waiting:
            oldest, _ = self._written.popitem(last=False)
            request_id = oldest.rpartition(".")[2]
            if self._waiting.get(request_id) == oldest:
                del self._waiting[request_id]
            self.forgotten += 1
        return Copy.WRITE

    def answered(self, line: bytes) -> None:
        """A line from the app's stdout: if it answers a request written here, it is kept."""
        if not self._waiting:
            return
        message = head_of(line)
        if message is None or message.method is not None or not isinstance(message.id, str):
            return  # a notification or a server request; the gateway's ids are strings
        self._settle(message.id, line)

    def cancelled(self, line: bytes) -> None:
        """A `notifications/cancelled` on c2s: the gateway gave up on that call, so no copy of
        it follows and its answer need not be kept."""
        if b"notifications/cancelled" not in line:
            return
        try:
            message = _decode_cancel(line)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return
        request_id = (message.params or {}).get("requestId")
        if message.method == "notifications/cancelled" and isinstance(request_id, str):
            self._settle(request_id, b"")

    def _settle(self, request_id: str, line: bytes) -> None:
        """The call is answered with `line` (empty: given up on, a copy is dropped)."""
        reply = self._waiting.pop(request_id, None)
        if reply is None:
            return
        self._written.pop(reply, None)
        now = self._clock()
        self._answered[reply] = _Answered(line, now)
        if line:
            self._with_line.append(reply)
            self._answered_bytes += len(line)
        self._prune(now)

    def _prune(self, now: float) -> None:
        while self._answered:
            reply, oldest = next(iter(self._answered.items()))
            if now - oldest.at <= self._keep:
                break
            del self._answered[reply]
            self._answered_bytes -= len(oldest.line)
            if self._with_line and self._with_line[0] == reply:  # the same order, less the blanked
                self._with_line.popleft()
        while self._answered_bytes > self._keep_bytes and self._with_line:
            answered = self._answered.get(self._with_line.popleft())
            if answered is not None and answered.line:
                self._answered_bytes -= len(answered.line)
                answered.line = b""
