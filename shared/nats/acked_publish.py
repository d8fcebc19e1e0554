"""JetStream publishes sent now and acknowledged later: a batch's acks awaited together.

nats-py's `js.publish` is a request per message: it awaits each ack under its own timer, parses
it with `json` into a dataclass, and a caller that wants several in flight wraps each in a task.
On the gateway's path (an audit record and a `tool.*` event per tool call) that was a fifth of
its CPU per call. Here each message is published with a reply subject under one wildcard inbox
of this connection (so the user's own `_INBOX_<user>.>` permission covers it); `send` returns
the future of its ack at once, and the acks (decoded with msgspec) resolve those futures.
A missing stream (no responders) or a JetStream error fails the future with nats-py's own
errors, so callers see what `js.publish` would have raised; a lost ack is the caller's timeout.

Its lifecycle is `shared.lifecycle`'s: `start()` subscribes to the acks, `stop()` unsubscribes
(what still waits for an ack then times out with its caller). A service's wiring starts it
before, and stops it after, what publishes through it; a `send` before `start()` starts it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import msgspec
import nats.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.errors import APIError, NoStreamResponseError

from shared.lifecycle import Lifecycle
from shared.nats import write_through
from shared.nats.inline_subscription import subscribe_inline

_NO_RESPONDERS = "503"


class _Ack(msgspec.Struct):
    stream: str = ""
    seq: int = 0
    duplicate: bool | None = None
    error: dict[str, Any] | None = None


_ack = msgspec.json.Decoder(_Ack)


class AckedPublisher(Lifecycle[None]):
    def __init__(self, nc: NATS) -> None:
        super().__init__("the JetStream ack listener")
        self._nc = nc
        self._prefix = ""  # set while started: the acks' inbox prefix
        self._waiting: dict[str, asyncio.Future[int]] = {}
        self._serial = 0

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        prefix = self._nc.new_inbox() + "."
        subscription = await subscribe_inline(self._nc, prefix + "*", self._on_ack)
        parts.push_async_callback(self._stop_listening, subscription)
        self._prefix = prefix

    async def _stop_listening(self, subscription: Subscription) -> None:
        self._prefix = ""
        with contextlib.suppress(nats.errors.ConnectionClosedError, nats.errors.BadSubscriptionError):
            await subscription.unsubscribe()

    async def send(self, subject: str, payload: bytes, headers: dict[str, str] | None = None) -> asyncio.Future[int]:
        """Publish to JetStream; the future is the stream sequence once the server has stored it.
        Only while started (`NotStarted` before): the acks' subscription must be there first."""
        self.require_started()
        queued = self.send_now(subject, payload, headers)
        if queued is not None:
            return queued
        token, future = self._expect()  # nats-py has to take it: its `publish` waits or says why
        try:
            await self._nc.publish(subject, payload, reply=self._prefix + token, headers=headers)
        except BaseException:
            future.cancel()
            raise
        return future

    def send_now(self, subject: str, payload: bytes,
                 headers: dict[str, str] | None = None) -> asyncio.Future[int] | None:
        """`send` without waiting: the message is queued to be written at the end of this turn of
        the loop (`shared.nats.write_through`); None (nothing sent) when nats-py has to take it: then
        `send` it. `NotStarted` before `start()` (the acks' subscription)."""
        self.require_started()
        token, future = self._expect()
        try:
            written = write_through.publish_soon(self._nc, subject, payload, reply=self._prefix + token,
                                                headers=headers)
        except BaseException:
            future.cancel()
            raise
        if not written:
            future.cancel()
            return None
        return future

    def _expect(self) -> tuple[str, asyncio.Future[int]]:
        self._serial += 1
        token = str(self._serial)
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiting[token] = future
        # Whoever gives up on the future (a timeout) leaves no entry behind.
        future.add_done_callback(lambda _: self._waiting.pop(token, None))
        return token, future

    async def publish(self, subject: str, payload: bytes, headers: dict[str, str] | None = None,
                      timeout: float = 5.0) -> int:
        """`send` and wait for the ack (at most `timeout` seconds: `TimeoutError`)."""
        return await asyncio.wait_for(await self.send(subject, payload, headers), timeout)

    @property
    def in_flight(self) -> int:
        return len(self._waiting)

    def _on_ack(self, msg: Msg) -> None:  # in the read loop (subscribe_inline): one task wake-up less per ack
        future = self._waiting.pop(msg.subject[len(self._prefix):], None)
        if future is None or future.done():
            return  # given up on already
        try:
            future.set_result(stored_sequence(msg))
        except Exception as exc:
            future.set_exception(exc)


def stored_sequence(ack: Msg) -> int:
    """The stream sequence a JetStream publish's ack gives, or the error `js.publish` raises for it
    (`NoStreamResponseError` when no stream took the subject, the `APIError` class of its code)."""
    if ack.headers and ack.headers.get("Status") == _NO_RESPONDERS:
        raise NoStreamResponseError
    try:
        decoded = _ack.decode(ack.data)
    except msgspec.MsgspecError as exc:
        raise APIError(description=f"unreadable JetStream ack: {exc}") from exc
    if decoded.error is not None:
        APIError.from_error(decoded.error)  # raises the error's own class, as `js.publish` does
    return decoded.seq
