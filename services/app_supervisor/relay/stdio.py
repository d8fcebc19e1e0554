"""One generation of one app's stdio ⇄ NATS relay.

- stdout: each line is published unchanged on `…s2c` (core NATS), from the pipe's own callback:
  cut into lines as the pipe delivers them and queued for the NATS socket at once
  (`shared.nats.write_through`), with no task in between. Lines nats-py has to take (NATS away, its
  buffer full) wait in order for a task that publishes them through nats-py; while more than
  `STDOUT_BACKLOG_BYTES` wait, the pipe is not read, so an app that outpaces NATS is slowed
  down, never buffered without end. A line nats-server found no gateway for is sent again
  once one listens (`unheard`); an event is sent again until the gateway confirms it stored
  (`receipts`).
- `…c2s`: each message is written to stdin followed by `\\n`, in arrival order; the copies the
  gateway sends of a call whose answer it has not had are written once, and answered again
  once the app answered (`relayed`).
- `….rcpt`: the gateway's receipts for the events it stored (`receipts`); never for the app.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Protocol

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError

from services.app_supervisor.config_check import LaunchSpec
from services.app_supervisor.framing import LineSplitter, Oversized, to_stdin_line
from services.app_supervisor.relay.receipts import Receipts, wants_receipt
from services.app_supervisor.relay.relayed import Copy, RelayedCalls
from services.app_supervisor.relay.unheard import Resender, is_initialize
from shared.contracts.subjects import Subjects
from shared.lifecycle import Lifecycle, cancel_task, unsubscribe
from shared.nats import write_through
from shared.nats.bus import NOT_WRITTEN_HEADER, RECEIPT_HEADER, is_jetstream_delivery, resend_of
from shared.nats.inline_subscription import subscribe_inline
from shared.observability import tracing
from shared.observability.logs import get_logger
from shared.observability.tracing import messaging

log = get_logger("aurora.app_supervisor.relay")

# Written to an app's stdin and not read by it yet, at most (nats-py's own limit for a
# subscription's pending bytes, which applied here before c2s was written in the read loop).
STDIN_BACKLOG_BYTES = 128 * 1024 * 1024
# Read from an app's stdout and not yet handed to NATS, at most, before the pipe is left unread.
STDOUT_BACKLOG_BYTES = 8 * 1024 * 1024
# Unconfirmed events sent again are said in the log at most this often (seconds), with their
# count: in a flood of events nobody confirms, each round of copies logged a warning.
RESENT_SAID_EVERY = 5.0


class Pipes(Protocol):
    """What the relay needs of the app's OS process (`services.app_supervisor.process`)."""

    def stdin_unread(self) -> int | None:
        """Bytes written to stdin the app has not read yet; None: stdin is closed."""

    def write_stdin(self, line: bytes) -> None: ...

    def read_stdout(self, reading: bool) -> None:
        """Read the app's stdout again, or leave it unread for now (the app blocks on a full pipe)."""


class StdioRelay(Lifecycle[None]):
    """`start()` once the process runs; `stop_input()` when it exited, then (once
    `stdout_relayed` is set, or the drain time passed) `stop()` (`shared.lifecycle`)."""

    def __init__(self, nc: NATS, subjects: Subjects, spec: LaunchSpec, generation: int, pipes: Pipes, *,
                 receipts: Receipts | None = None) -> None:
        """`pipes`: the app's process; `receipts`: the app's events not yet confirmed stored, shared
        by its generations (a generation sends again what the one before it could not get confirmed)."""
        super().__init__(f"the relay of {spec.name} (generation {generation})")
        self._nc = nc
        self._spec = spec
        self.generation = generation
        self._c2s = subjects.mcp(spec.app_id, spec.instance, "c2s")
        self._rcpt = subjects.mcp(spec.app_id, spec.instance, "rcpt")
        self._s2c = subjects.mcp(spec.app_id, spec.instance, "s2c")
        self._resender = Resender(nc, self._s2c, spec.name)
        self._relayed = RelayedCalls()
        self._receipts = receipts if receipts is not None else Receipts()
        self._unconfirmed: asyncio.Task[None] | None = None  # sends again what waits for its receipt
        self._pipes = pipes
        self._subs: list[Subscription] = []
        self.line_limit = nc.max_payload if nc.max_payload > 0 else 1024 * 1024
        self._lines = LineSplitter(self.line_limit)
        self._stdout_waiting: deque[tuple[bytes, dict[str, str] | None]] = deque()  # for nats-py, in order
        self._stdout_waiting_bytes = 0
        self._stdout_mover: asyncio.Task[None] | None = None
        self._stdout_closed = False
        self.stdout_paused = False
        self.stdout_relayed = asyncio.Event()  # stdout ended and every line of it handed to NATS

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        """Subscribe `…c2s` and `….rcpt` (at the server when `start()` returns, so a client may send
        `initialize` right away). OSError: NATS cannot relay (e.g. the connection is closed)."""
        parts.push_async_callback(self._resender.stop)
        parts.push_async_callback(self._stop_sending)
        parts.push_async_callback(self.stop_input)
        try:
            await self._resender.start()
            self._subs.append(await subscribe_inline(self._nc, self._rcpt, self._confirmed))
            self._subs.append(await subscribe_inline(self._nc, self._c2s, self._to_stdin))
        except NatsError as exc:
            raise OSError(f"cannot relay {self._c2s}: {exc}") from exc
        with contextlib.suppress(NatsError, asyncio.TimeoutError):
            await write_through.flush(self._nc, timeout=2)
        if self._receipts.waiting:  # what the generation before could not get confirmed
            self._send_unconfirmed_soon()

    async def stop_input(self) -> None:
        """The app exited (its stdin is closed already): no more of `…c2s` (or receipts) is taken."""
        subs, self._subs = self._subs, []
        for sub in subs:
            await unsubscribe(sub)

    async def _stop_sending(self) -> None:
        """Stop relaying what the app wrote; what waits for NATS or for a receipt is left."""
        if self._stdout_mover is not None:
            await cancel_task(self._stdout_mover)
        if self._unconfirmed is not None:  # no receipt can reach this generation once c2s is gone
            await cancel_task(self._unconfirmed)
            if self._receipts.waiting:
                log.warning("app exited with events not yet confirmed stored by a gateway; its next "
                            "generation sends them again", app=self._spec.name, generation=self.generation,
                            events=self._receipts.waiting)

    # -- c2s → stdin ---------------------------------------------------------------------------
    def _to_stdin(self, msg: Msg) -> None:
        """Called in the connection's read loop for each c2s message in arrival order
        (`subscribe_inline`) and written at once, so the stdin order is the c2s order. The pipe
        buffers what the app has not read yet; past `STDIN_BACKLOG_BYTES` the message is dropped
        and said (an app that stopped reading its stdin), never a buffer growing without end."""
        if is_jetstream_delivery(msg.reply):
            return  # a stream replayed into the relay is not the gateway speaking
        pipes = self._pipes
        unread = pipes.stdin_unread() if pipes is not None else None
        if pipes is None or unread is None:
            log.warning("message for an app whose stdin is closed dropped", app=self._spec.name,
                        generation=self.generation, size=len(msg.data))
            return
        line = to_stdin_line(msg.data)
        if line is None:
            log.error("c2s message dropped: not one JSON-RPC message", app=self._spec.name,
                      size=len(msg.data))
            return
        if unread + len(line) > STDIN_BACKLOG_BYTES:
            log.error("c2s message dropped: the app is not reading its stdin", app=self._spec.name,
                      generation=self.generation, size=len(line), unread_bytes=unread)
            return
        if is_initialize(line):  # a new session: the previous one's unheard answers are not its own
            self._resender.forget()
            self._relayed.session_began(msg.reply)
        elif msg.reply:
            if not self._first_copy(msg):
                return
        else:
            self._relayed.cancelled(line)
        incoming = tracing.headers_trace(msg.headers)
        if incoming is None:  # not part of a traced call (the SDK's own traffic, or tracing off)
            pipes.write_stdin(line)
            return
        with tracing.handling("relay c2s", incoming, attributes={
                **messaging("process", msg.subject), "aurora.app": self._spec.app_id,
                "aurora.app.generation": self.generation}):
            pipes.write_stdin(line)

    def _confirmed(self, msg: Msg) -> None:
        """A receipt: the gateway stored an event of the app's (called in the read loop)."""
        receipt = msg.headers.get(RECEIPT_HEADER) if msg.headers else None
        if receipt is not None:
            self._receipts.confirmed(receipt)

    def _first_copy(self, msg: Msg) -> bool:
        """True: a request the app has not had, to write. A copy of one it had is answered
        again if it answered already, else dropped; a copy that may have run elsewhere is refused."""
        copy = self._relayed.request(msg.reply, resend_of(msg.headers))
        if copy is Copy.WRITE:
            return True
        if isinstance(copy, bytes):
            log.info("a call's answer sent again: the gateway did not get it", app=self._spec.name,
                     generation=self.generation)
            self._relay(copy)
        elif copy is Copy.REFUSE:
            log.warning("a copy of a call not written: it may have run in an earlier generation of the app, "
                        "or it is older than its copies are kept", app=self._spec.name, generation=self.generation)
        elif copy is Copy.NOT_OURS:
            self._not_written(msg, f"its session did not begin with this process of the app (generation "
                                   f"{self.generation}); nothing ran")
        return False

    def _not_written(self, msg: Msg, why: str) -> None:
        """Tell the gateway, on the call's reply subject (where nats-server's 503 would come),
        that the call was not written to the app: it fails at once as not delivered."""
        log.info("a call not written to the app", app=self._spec.name, generation=self.generation, why=why)
        if not write_through.publish_soon(self._nc, msg.reply, headers={NOT_WRITTEN_HEADER: why}):
            # NATS went away since the call came: the gateway's call waits out its timeout instead.
            log.warning("could not tell the gateway that a call was not written", app=self._spec.name)

    # -- stdout → s2c --------------------------------------------------------------------------
    def stdout(self, data: bytes) -> None:
        """Called by the stdout pipe with what the app wrote: each whole line goes to NATS now."""
        for line in self._lines.feed(data):
            self._relay(line)

    def stdout_ended(self) -> None:
        for line in self._lines.end():
            self._relay(line)
        self._stdout_closed = True
        if not self._stdout_waiting:
            self.stdout_relayed.set()

    def _relay(self, line: bytes | Oversized, headers: dict[str, str] | None = None) -> None:
        """A line for `…s2c`; `headers`: an event's receipt token when it is sent again."""
        if isinstance(line, Oversized):
            log.error("app message too large for NATS, dropped", app=self._spec.name, size=line.size,
                      max_payload=self._nc.max_payload, subject=self._s2c)
            return
        self._relayed.answered(line)
        if headers is None and wants_receipt(line):
            headers = {RECEIPT_HEADER: self._receipts.new(line)}
            self._send_unconfirmed_soon()
        if not self._stdout_waiting and self._resender.publish_soon(line, headers):
            return
        self._stdout_waiting.append((line, headers))  # behind what waits already, or for NATS to take it
        self._stdout_waiting_bytes += len(line)
        if self._stdout_waiting_bytes > STDOUT_BACKLOG_BYTES and not self.stdout_paused:
            self._read_stdout(False)
        if self._stdout_mover is None or self._stdout_mover.done():
            self._stdout_mover = asyncio.get_running_loop().create_task(
                self._move_stdout(), name=f"stdout {self._spec.name}#{self.generation}")

    def _read_stdout(self, reading: bool) -> None:
        self.stdout_paused = not reading
        if self._pipes is not None:
            self._pipes.read_stdout(reading)
        say = log.info if reading else log.warning
        say("app stdout read again" if reading else "app stdout left unread: NATS is behind",
            app=self._spec.name, waiting_bytes=self._stdout_waiting_bytes)

    async def _move_stdout(self) -> None:
        """Publishes the lines that could not be queued at once, in order, through nats-py (which
        buffers while reconnecting, and waits while its buffer is full)."""
        while self._stdout_waiting:
            line, headers = self._stdout_waiting[0]  # left in place while sent: what comes meanwhile queues behind
            try:
                await self._resender.publish(line, headers)
            except NatsError as exc:
                log.error("relaying app message failed", app=self._spec.name, size=len(line), error=str(exc))
            self._stdout_waiting.popleft()
            self._stdout_waiting_bytes -= len(line)
            if self.stdout_paused and self._stdout_waiting_bytes <= STDOUT_BACKLOG_BYTES // 2:
                self._read_stdout(True)
        if self._stdout_closed:
            self.stdout_relayed.set()

    # -- events sent again until confirmed -----------------------------------------------------
    def _send_unconfirmed_soon(self) -> None:
        if self._unconfirmed is None or self._unconfirmed.done():
            self._unconfirmed = asyncio.get_running_loop().create_task(
                self._send_unconfirmed(), name=f"unconfirmed {self._spec.name}#{self.generation}")

    async def _send_unconfirmed(self) -> None:
        """Each event the gateway has not confirmed stored, sent again (with its token) until it
        does or its patience ran out; while one waits."""
        loop = asyncio.get_running_loop()
        resent, given_up, said_at = 0, self._receipts.given_up, float("-inf")
        while (pause := self._receipts.next_due()) is not None:
            await asyncio.sleep(pause)
            again = self._receipts.due()
            for token, line in again:
                self._relay(line, {RECEIPT_HEADER: token})
            resent += len(again)
            if (resent or self._receipts.given_up > given_up) and loop.time() - said_at >= RESENT_SAID_EVERY:
                self._say_unconfirmed(resent, self._receipts.given_up - given_up)
                resent, given_up, said_at = 0, self._receipts.given_up, loop.time()
        self._say_unconfirmed(resent, self._receipts.given_up - given_up)  # what the last interval left unsaid

    def _say_unconfirmed(self, resent: int, given_up: int) -> None:
        if resent:
            log.warning("app events not yet confirmed stored by a gateway; sent again", app=self._spec.name,
                        generation=self.generation, events=resent, waiting=self._receipts.waiting)
        if given_up:
            log.error("app events never confirmed stored by a gateway; no longer sent", app=self._spec.name,
                      generation=self.generation, events=given_up)
