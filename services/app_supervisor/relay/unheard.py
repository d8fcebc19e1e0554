"""An app's answers that nobody heard, sent again once a gateway listens.

Each stdout line goes out on `…s2c` with a reply subject of its own, `<inbox>.<n>`. Nobody
answers there; but when nats-server finds no subscriber for the line (the gateway's connection
is away: a network cut, its NATS node killed, the gateway reconnecting), it says so there with
a 503 status. Such a line is kept and published again, with growing pauses, until nats-server
no longer says so or `PATIENCE_SECONDS` have passed. Without this the gateway's call would wait
out its timeout and end `outcome_unknown` though the app had answered (a write would stay
unverified).

While lines wait to be sent again, the app's newer lines queue behind them, so a call's
progress notes still come before its answer. A new MCP session (an `initialize` on `…c2s`, a
gateway started again) drops what waits: its answers belong to the previous session, whose
request ids the new one may use again.

A line forwarded to a NATS node that dies before delivering it gets no 503 and is not sent
again here: this covers a listener that is known to be gone. An answer lost in flight is given
again when the gateway sends a copy of its call (`services.app_supervisor.relay.relayed`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import Error as NatsError

from shared.lifecycle import Lifecycle, cancel_task, unsubscribe
from shared.nats import write_through
from shared.nats.bus import unheard_token
from shared.nats.inline_subscription import subscribe_inline
from shared.observability.logs import get_logger

log = get_logger("aurora.app_supervisor.unheard")

# A line's 503 comes back within milliseconds; lines older than this are no longer looked for.
HEARD_WINDOW_SECONDS = 10.0
# How long a line nobody heard is sent again (longer than any call waits for its answer).
PATIENCE_SECONDS = 60.0
# Lines waiting to be sent again, at most (the oldest are dropped past it, and said).
WAITING_BYTES = 8 * 1024 * 1024
# Pauses between rounds of sending again: doubled from the first up to the last.
FIRST_PAUSE, LAST_PAUSE = 0.05, 1.0


class _Method(msgspec.Struct):
    method: str | None = None


_decode_method = msgspec.json.Decoder(_Method).decode


def is_initialize(line: bytes) -> bool:
    """An MCP `initialize` request: the first message of every session."""
    if b'"initialize"' not in line:  # the cheap test first: nearly every line fails it
        return False
    try:
        return _decode_method(line).method == "initialize"
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False


@dataclass(frozen=True)
class Line:
    data: bytes
    first_sent: float  # monotonic seconds when the app wrote it
    headers: dict[str, str] | None = None  # an event's receipt token (`receipts`)


class UnheardLines:
    """The bookkeeping, without I/O: lines sent and not yet known heard (by number, with when
    they were sent), and the lines nobody heard, in order, waiting to be sent again."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, *, window: float = HEARD_WINDOW_SECONDS,
                 patience: float = PATIENCE_SECONDS, max_bytes: int = WAITING_BYTES) -> None:
        self._clock = clock
        self._window = window
        self._patience = patience
        self._max_bytes = max_bytes
        self._numbers = itertools.count(1)
        self._sent: OrderedDict[int, tuple[float, Line]] = OrderedDict()
        self.waiting: deque[Line] = deque()
        self._waiting_bytes = 0
        self.dropped = 0  # given up on: past their patience, or past the byte limit

    def new(self, data: bytes, headers: dict[str, str] | None = None) -> Line:
        """A line the app wrote just now."""
        return Line(data, self._clock(), headers)

    def sent(self, line: Line) -> int:
        """Note a line about to be published (again); its number goes in its reply subject."""
        now = self._clock()
        while self._sent:  # those sent before the window are no longer looked for
            sent_at, _ = next(iter(self._sent.values()))
            if now - sent_at <= self._window:
                break
            self._sent.popitem(last=False)
        number = next(self._numbers)
        self._sent[number] = (now, line)
        return number

    def unheard(self, number: int) -> bool:
        """nats-server found nobody for line `number`: it waits to be sent again (True), unless
        it is no longer looked for."""
        found = self._sent.pop(number, None)
        if found is None:
            return False
        self.hold(found[1])
        return True

    def hold(self, line: Line) -> None:
        """Queue a line behind those waiting (the oldest go when the queue is over its limit)."""
        self.waiting.append(line)
        self._waiting_bytes += len(line.data)
        while self._waiting_bytes > self._max_bytes:
            self._waiting_bytes -= len(self.waiting.popleft().data)
            self.dropped += 1

    def take(self) -> list[Line]:
        """The waiting lines to send again now, in order; those past their patience are dropped."""
        now = self._clock()
        lines, self.waiting, self._waiting_bytes = list(self.waiting), deque(), 0
        fresh = [line for line in lines if now - line.first_sent <= self._patience]
        self.dropped += len(lines) - len(fresh)
        return fresh

    def forget(self) -> int:
        """A new session: nothing of the previous one is sent again. How many lines were dropped."""
        dropped = len(self.waiting)
        self._sent.clear()
        self.waiting.clear()
        self._waiting_bytes = 0
        return dropped


class Resender(Lifecycle[None]):
    """Publishes an app's stdout lines on `subject` and sends again those nobody heard."""

    def __init__(self, nc: NATS, subject: str, app: str) -> None:
        super().__init__(f"the resender of {app}")
        self._nc = nc
        self._subject = subject
        self._app = app
        self._inbox = nc.new_inbox()
        self._lines = UnheardLines()
        self._task: asyncio.Task[None] | None = None  # sending again, while lines wait
        self._pause = FIRST_PAUSE
        self._last_unheard = 0.0

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        parts.push_async_callback(self._stop_sending)
        parts.push_async_callback(unsubscribe, await subscribe_inline(self._nc, f"{self._inbox}.*", self._on_status))

    def publish_soon(self, data: bytes, headers: dict[str, str] | None = None) -> bool:
        """Queue a new line for the socket now (`write_through.publish_soon`), or behind the lines
        that wait to be sent again; False when nats-py has to take it (`publish`)."""
        if self._held(data, headers):
            return True
        return write_through.publish_soon(self._nc, self._subject, data,
                                          reply=self._reply(self._lines.new(data, headers)), headers=headers)

    async def publish(self, data: bytes, headers: dict[str, str] | None = None) -> None:
        """A new line through nats-py (which buffers while it reconnects), or behind the lines
        that wait to be sent again."""
        if self._held(data, headers):
            return
        await self._nc.publish(self._subject, data, reply=self._reply(self._lines.new(data, headers)),
                               headers=headers)

    def forget(self) -> None:
        dropped = self._lines.forget()
        if dropped:
            log.warning("a new session began: app messages nobody heard are not sent again", app=self._app,
                        dropped=dropped)

    async def _stop_sending(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            await cancel_task(task)

    def _held(self, data: bytes, headers: dict[str, str] | None) -> bool:
        """Queued behind the lines that wait to be sent again, if any wait."""
        if not self._lines.waiting:
            return False
        self._lines.hold(self._lines.new(data, headers))
        return True

    def _reply(self, line: Line) -> str:
        return f"{self._inbox}.{self._lines.sent(line)}"

    def _on_status(self, msg: Msg) -> None:
        number = unheard_token(msg)
        if number is None or not number.isdigit() or not self._lines.unheard(int(number)):
            return
        now = time.monotonic()
        if now - self._last_unheard > 2 * LAST_PAUSE:  # a new outage: said once, and retried quickly at first
            self._pause = FIRST_PAUSE
            log.warning("an app message reached no gateway; sending it again until one listens",
                        app=self._app, subject=self._subject)
        self._last_unheard = now
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._send_again(), name=f"resend {self._app}")

    async def _send_again(self) -> None:
        while self._lines.waiting:
            await asyncio.sleep(self._pause)
            self._pause = min(LAST_PAUSE, self._pause * 2)
            dropped_before = self._lines.dropped
            for line in self._lines.take():
                try:
                    await self._nc.publish(self._subject, line.data, reply=self._reply(line), headers=line.headers)
                except NatsError as exc:
                    log.error("sending an app message again failed", app=self._app, error=str(exc))
            if self._lines.dropped > dropped_before:
                log.error("app messages nobody heard were dropped", app=self._app,
                          dropped=self._lines.dropped - dropped_before, patience_seconds=PATIENCE_SECONDS)
