"""MCP over NATS: the client side of a stdio app that the supervisor relays.

The transport has the shape of the SDK's `stdio_client` (an async context manager yielding a
read stream of `SessionMessage | Exception` and a write stream of `SessionMessage`), but its
bytes travel on `<p>.mcp.<app>.<instance>.{c2s,s2c}`, one JSON-RPC message per NATS message.

A relay nobody is at the other end of ends at once: the session's `initialize` goes with a
reply subject, so when no app-supervisor listens on `…c2s` (none runs the app's process: not
started yet, between two processes, given up) nats-server says so with a 503 there, and the
transport closes its read stream with `not_relayed` set. The session then says so at once (still
connecting: the app failed nothing), instead of when its `health_timeout_seconds` ran out; the
supervisor's `…proc` event starts the next attempt once a process runs.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, runtime_checkable

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCRequest, jsonrpc_message_adapter
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import Error as NatsError

from services.mcp_gateway.transports.direct import DirectCalls, NotDelivered
from services.mcp_gateway.transports.streams import TransportStreams
from shared.contracts.subjects import Subjects
from shared.nats import write_through
from shared.nats.bus import NOT_WRITTEN_HEADER, RECEIPT_HEADER, RESEND_HEADER, is_jetstream_delivery, unheard_token
from shared.nats.inline_subscription import subscribe_inline
from shared.observability import tracing
from shared.observability.logs import get_logger
from shared.streak import FailureStreak

log = get_logger("aurora.mcp_gateway.nats_stdio")

RELAY_BACKLOG = 20_000  # messages from one app waiting for its session to read them, at most
INITIALIZE_TOKEN = "initialize"  # the `unheard` token of the session's `initialize`
NOT_RELAYED = "no app-supervisor runs the app's process now (the session begins once one has started it)"


@dataclass
class ReceiptedMessage(SessionMessage):
    """An app's event the supervisor sends again until the gateway confirms it stored: `receipt`
    is its token (`RECEIPT_HEADER`), for the signal's id and the confirmation."""

    receipt: str | None = None


def parse_message(data: bytes, receipt: str | None = None) -> SessionMessage | Exception:
    """One relayed stdout line → a SessionMessage, or the parse error as a value."""
    try:
        message = jsonrpc_message_adapter.validate_json(data, by_name=False)
    except ValueError as exc:
        return exc
    return SessionMessage(message) if receipt is None else ReceiptedMessage(message, receipt=receipt)


def serialize_message(message: SessionMessage) -> bytes:
    return message.message.model_dump_json(by_alias=True, exclude_unset=True).encode()


@runtime_checkable
class ReportsNotRelayed(Protocol):
    """A transport that knows when nobody relays it: nats-server said so for its `initialize`."""

    not_relayed: bool


class NatsStdioTransport(AbstractAsyncContextManager[TransportStreams]):
    """Open the relay for one app instance; closing it unsubscribes and ends both streams.

    `direct` writes tool calls on the same relay without the SDK (see transports/direct.py);
    its pending calls fail when the relay closes."""

    def __init__(self, nc: NATS, subjects: Subjects, app_id: str, instance: str,
                 relaying: FailureStreak | None = None) -> None:
        c2s = subjects.mcp(app_id, instance, "c2s")
        unheard = nc.new_inbox()  # `<inbox>.<request id>`: where nats-server says nobody listened

        async def publish(data: bytes, request_id: str | None, first_sent: float | None) -> None:
            # The headers: the supervisor's relay span continues the call's; a copy says so.
            headers = tracing.current_headers()
            if first_sent is not None:
                headers = {**(headers or {}), RESEND_HEADER: f"{first_sent:.3f}"}
            await write_through.publish(nc, c2s, data, reply=f"{unheard}.{request_id}" if request_id else "",
                                        headers=headers)

        self.direct = DirectCalls(publish)
        # Set when nats-server found nobody listening for the session's `initialize` (the read
        # stream then ends): see the module.
        self.not_relayed = False
        self._relay = _relay(nc, subjects, app_id, instance, self.direct, unheard,
                             relaying or relaying_streak(app_id, instance), self._nobody_relays)

    def _nobody_relays(self) -> None:
        self.not_relayed = True

    async def __aenter__(self) -> TransportStreams:
        return await self._relay.__aenter__()

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        self.direct.close()
        return await self._relay.__aexit__(exc_type, exc, tb)


def _is_initialize(message: SessionMessage) -> bool:
    return isinstance(message.message, JSONRPCRequest) and message.message.method == "initialize"


def nats_stdio_transport(nc: NATS, subjects: Subjects, app_id: str, instance: str,
                         relaying: FailureStreak | None = None) -> NatsStdioTransport:
    return NatsStdioTransport(nc, subjects, app_id, instance, relaying)


def relaying_streak(app_id: str, instance: str) -> FailureStreak:
    """Tool calls that reach no app-supervisor, said as one streak per app instance: while its
    supervisor is away every call fails so, and the session that follows it (a new relay) is where
    it works again. One streak for all of the instance's relays says both."""
    return FailureStreak(log, "relay to the app-supervisor", app=app_id, instance=instance)


class _FromApp:
    """The app's messages in the order it sent them: an answer to a direct call goes to the call
    waiting for it, the rest to the SDK session's read stream.

    An answer, and a progress note of one of the gateway's own calls (`DirectCalls.answer`), is
    taken right in the connection's read loop (`subscribe_inline`), with no task in between: notes
    and answers in the order the app wrote them. Messages for the session go through one task
    (`_move_on`), as nats-py's own task per subscription took them before: sending to the
    session's stream yields to the session, so it reads each before the next is looked at; while
    that task has messages in hand, an answer waits in `_backlog` behind them. Past
    `RELAY_BACKLOG` waiting messages the overflow is dropped and said (an app flooding its stdout
    faster than its session reads), never a backlog that grows without end."""

    def __init__(self, direct: DirectCalls, stream: MemoryObjectSendStream[SessionMessage | Exception],
                 app_id: str, instance: str, relaying: FailureStreak) -> None:
        self._direct = direct
        self._relaying = relaying  # a message from the app: a supervisor relays again
        self._stream = stream
        self._app_id = app_id
        self._instance = instance
        self._backlog: deque[tuple[bytes, str | None]] = deque()  # each with its receipt token, if any
        self._moving: asyncio.Task[None] | None = None
        self.dropped = 0

    def on_message(self, msg: Msg) -> None:
        if is_jetstream_delivery(msg.reply):
            return
        self._relaying.worked()
        receipt = msg.headers.get(RECEIPT_HEADER) if msg.headers else None
        if receipt is not None or self._backlog or (self._moving is not None and not self._moving.done()) \
                or not self._direct.answer(msg.data):
            self._wait(msg.data, receipt)

    def _wait(self, data: bytes, receipt: str | None = None) -> None:
        if len(self._backlog) >= RELAY_BACKLOG:
            if self.dropped == 0:
                log.error("app messages dropped: its session reads slower than the app writes", app=self._app_id,
                          instance=self._instance, waiting=len(self._backlog))
            self.dropped += 1
            return
        self._backlog.append((data, receipt))
        if self._moving is None or self._moving.done():
            self._moving = asyncio.get_running_loop().create_task(self._move_on(), name=f"mcp-s2c-{self._app_id}")

    async def _move_on(self) -> None:
        try:
            while self._backlog:
                data, receipt = self._backlog[0]  # left in place while sent: what arrives meanwhile queues behind
                if receipt is not None or not self._direct.answer(data):
                    await self._stream.send(parse_message(data, receipt))
                self._backlog.popleft()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._backlog.clear()

    def close(self) -> None:
        if self._moving is not None:
            self._moving.cancel()
        unread = len(self._backlog) + self.dropped
        if unread:  # a flood the session could not keep up with: said, never silently lost
            log.error("relay closed with messages from the app unread; dropped", app=self._app_id,
                      instance=self._instance, dropped=unread)


def _on_unheard(direct: DirectCalls, c2s: str, relaying: FailureStreak,
                nobody_relays: Callable[[], None]) -> Callable[[Msg], None]:
    """The handler of a relay's `unheard` inbox: a 503 status there (no app-supervisor listens),
    or the supervisor's `NOT_WRITTEN_HEADER`, fails its request at once. While the app's
    supervisor is away every call fails so: said as one streak, not per call. A 503 for the
    session's `initialize` ends the relay (`nobody_relays`)."""

    def on_status(msg: Msg) -> None:
        request_id = unheard_token(msg)
        if request_id is None:
            return
        why = (msg.headers or {}).get(NOT_WRITTEN_HEADER)
        if request_id == INITIALIZE_TOKEN:
            if why is None:  # the supervisor never refuses an `initialize`: only nats-server answers here
                nobody_relays()
            return
        if not direct.unheard(request_id, c2s, why and f"the app-supervisor did not write it: {why}"):
            return
        if why is None:
            relaying.failed(NotDelivered(f"a tool call reached no app-supervisor on {c2s}: not delivered"))
        else:  # a supervisor is there; the session begins again once it hears of the app's new process
            log.info("a tool call not written by the app-supervisor", relay=c2s, why=why)

    return on_status


@asynccontextmanager
async def _relay(
    nc: NATS, subjects: Subjects, app_id: str, instance: str, direct: DirectCalls, unheard: str,
    relaying: FailureStreak, nobody_relays: Callable[[], None],
) -> AsyncIterator[TransportStreams]:
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](256)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](256)
    c2s = subjects.mcp(app_id, instance, "c2s")
    from_app = _FromApp(direct, read_writer, app_id, instance, relaying)

    def not_relayed() -> None:
        nobody_relays()
        read_writer.close()  # the session's read ends: nothing will ever come on this relay

    sub = await subscribe_inline(nc, subjects.mcp(app_id, instance, "s2c"), from_app.on_message)
    try:
        statuses = await subscribe_inline(nc, f"{unheard}.*", _on_unheard(direct, c2s, relaying, not_relayed))
    except BaseException:
        with suppress(NatsError):
            await sub.unsubscribe()
        raise

    async def pump_writes() -> None:
        async with write_reader:
            async for message in write_reader:
                # The session's inbox goes with its `initialize`: the supervisor then knows the
                # session began with this generation of the app, whose copies of calls it may write.
                reply = f"{unheard}.{INITIALIZE_TOKEN}" if _is_initialize(message) else ""
                await nc.publish(c2s, serialize_message(message), reply=reply)
            # No `nc.flush()` here: the connection outlives the transport, so its flusher sends
            # what is buffered anyway, and closing the transport cancels this task — a cancelled
            # flush makes nats-py's read loop die on the late PONG (InvalidStateError), leaving
            # the whole gateway deaf (nats-io/nats.py#624 is the same class of bug).

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump_writes, name=f"mcp-c2s-{app_id}")
        try:
            yield read_stream, write_stream
        finally:
            for subscription in (sub, statuses):
                with suppress(NatsError):  # the connection may be closing under us
                    await subscription.unsubscribe()
            from_app.close()
            await read_writer.aclose()
            await write_stream.aclose()
            await read_stream.aclose()  # ours to close, like the SDK's stdio_client does
            tg.cancel_scope.cancel()
