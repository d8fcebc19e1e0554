"""Tool calls the gateway sends itself on an app's relay, beside the SDK session.

Why: through the SDK's `ClientSession` every call crosses a writer task, two memory streams,
the notification tap, a per-request span and pydantic models both ways — on the gateway's hot
path that is about a third of its CPU per call. The relay is one JSON-RPC message per NATS
message, so the gateway can write the `tools/call` request itself with an id the SDK never uses
(`aurora-<n>`; the SDK numbers its requests) and the transport hands the matching response
straight to the waiting call. The handshake, listings, notifications and server requests stay
with the SDK, as does the output-schema check of each result.

A request is published with a reply subject of its own (`publish(data, request_id)`): nobody
answers on it, but when no supervisor listens on the relay (its connection is away, or it died)
nats-server says so there with a 503 status, and `unheard` fails the call as never delivered.
Without it the call would wait out its timeout and end `outcome_unknown`, though the app never
got it (a write would then stay unverified).

A request or its answer forwarded to a NATS node that dies before delivering it is lost with no
503 (core NATS delivers at most once). So while a call has no answer, the same request is
published again (`resent`), after `RESEND_FIRST` seconds and then at growing pauses, for
`RESEND_WINDOW` seconds from the first: the supervisor writes a request to its app once and
answers a copy of an answered one with the app's answer again
(`services.app_supervisor.relay.relayed`). Once a copy went out, a 503 no longer says the call did not
run (an earlier copy may have reached the app); the call then waits for its answer or timeout.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

import msgspec

from shared.nats.bus import RESEND_WINDOW

ID_PREFIX = "aurora-"
# Pauses before the copies of a request still unanswered: the first, doubled up to the last.
RESEND_FIRST, RESEND_LAST = 1.0, 4.0


class DirectResponse(msgspec.Struct, frozen=True):
    """A JSON-RPC response whose id is one of ours (`result` stays raw until the caller wants
    it), or a notification (`method`, `params`)."""

    id: str | int | None = None
    method: str | None = None
    params: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)  # decoded only for a progress note
    result: msgspec.Raw = msgspec.field(default_factory=msgspec.Raw)  # empty: no result
    error: dict[str, Any] | None = None


class ConnectionLost(ConnectionError):
    """The relay closed while the call was waiting."""


class NotDelivered(ConnectionError):
    """nats-server delivered the request to nobody: the app never got it."""


# Where the request goes: its bytes, its id for a request (None for a notification), and for a
# copy of a request, when the first was sent (epoch seconds).
Publish = Callable[[bytes, str | None, float | None], Awaitable[None]]


class _Pending:
    """A request waiting for its answer: what was sent, when first, and how often."""

    __slots__ = ("answer", "copies", "data", "first_sent", "pause", "timer")

    def __init__(self, answer: asyncio.Future[DirectResponse], data: bytes, pause: float) -> None:
        self.answer = answer
        self.data = data
        self.first_sent = time.time()
        self.copies = 0
        self.pause = pause
        self.timer: asyncio.TimerHandle | None = None

    def settle(self) -> asyncio.Future[DirectResponse]:
        if self.timer is not None:
            self.timer.cancel()
        return self.answer


_decode_response = msgspec.json.Decoder(DirectResponse).decode
_encode = msgspec.json.Encoder().encode


class DirectCalls:
    """Pending requests by id; `send` writes one, `answer` routes a relayed message to it."""

    def __init__(self, publish: Publish, *, resend_first: float = RESEND_FIRST, resend_last: float = RESEND_LAST,
                 window: float = RESEND_WINDOW) -> None:
        self._publish = publish
        self._resend_first = resend_first
        self._resend_last = resend_last
        self._window = window
        self._ids = itertools.count(1)
        self._pending: dict[str, _Pending] = {}
        # Late answers to requests given up or already answered (a copy's answer came too) are
        # ours too: the SDK would warn about an unknown id.
        self._settled: deque[str] = deque(maxlen=1024)
        self._copies: set[asyncio.Future[None]] = set()
        self._closed = False
        # Set by the session: notes a `notifications/progress` for one of its calls in flight
        # (True when it was one). Called here, in the order the app wrote, a note always comes
        # before the answer it preceded; through the SDK's stream it could come after it.
        self.progressed: Callable[[dict[str, Any] | None], bool] | None = None

    async def send(self, method: str, params: dict[str, Any]) -> tuple[str, asyncio.Future[DirectResponse]]:
        if self._closed:
            raise ConnectionLost("the relay is closed")
        request_id = f"{ID_PREFIX}{next(self._ids)}"
        loop = asyncio.get_running_loop()
        pending = _Pending(loop.create_future(), _encode({"jsonrpc": "2.0", "id": request_id, "method": method,
                                                          "params": params}), self._resend_first)
        self._pending[request_id] = pending
        try:
            await self._publish(pending.data, request_id, None)
        except BaseException:
            self._pending.pop(request_id, None)
            raise
        if request_id in self._pending:  # not answered or failed while it was written
            pending.timer = loop.call_later(pending.pause, self._send_copy, request_id)
        return request_id, pending.answer

    def _send_copy(self, request_id: str) -> None:
        """No answer yet: the request again, unless the window for copies has passed."""
        pending = self._pending.get(request_id)
        if pending is None or self._closed or time.time() - pending.first_sent > self._window:
            return
        pending.copies += 1
        copy: asyncio.Future[None] = asyncio.ensure_future(self._publish(pending.data, request_id,
                                                                        pending.first_sent))
        self._copies.add(copy)
        copy.add_done_callback(self._copy_sent)
        pending.pause = min(pending.pause * 2, self._resend_last)
        pending.timer = asyncio.get_running_loop().call_later(pending.pause, self._send_copy, request_id)

    def _copy_sent(self, copy: asyncio.Future[None]) -> None:
        self._copies.discard(copy)
        if not copy.cancelled():
            copy.exception()  # a copy that could not be written: the next one, or the call's timeout

    async def abandon(self, request_id: str, reason: str) -> None:
        """Forget a request (timed out or its caller went away) and tell the app, as MCP asks."""
        pending = self._pending.pop(request_id, None)
        if pending is None or self._closed:
            return
        pending.settle()
        self._settled.append(request_id)
        cancelled = {"requestId": request_id, "reason": reason}
        await self._publish(_encode({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancelled}),
                            None, None)

    def answer(self, data: bytes) -> bool:
        """True when `data` answered one of our requests or was progress of one (and is
        consumed); anything else — the SDK's responses, other notifications, server requests,
        junk — is the SDK's to read."""
        if not self._pending and not self._settled:
            return False
        try:
            response = _decode_response(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return False
        if response.method == "notifications/progress" and response.id is None:
            if self.progressed is None:
                return False
            params = msgspec.json.decode(response.params) if response.params else None
            return self.progressed(params if isinstance(params, dict) else None)
        if response.method is not None or not isinstance(response.id, str):
            return False
        pending = self._pending.pop(response.id, None)
        if pending is None:
            return response.id in self._settled
        waiting = pending.settle()
        if pending.copies:  # an answer to a copy may follow this one
            self._settled.append(response.id)
        if not waiting.done():
            waiting.set_result(response)
        return True

    def unheard(self, request_id: str, subject: str, why: str | None = None) -> bool:
        """nats-server found nobody listening on `subject` when the request went out, or the
        app-supervisor did not write it to the app (`why`): the call fails as not delivered.
        False: not a request waiting here (answered or given up), or one whose copies went out
        (an earlier one may have reached the app)."""
        pending = self._pending.get(request_id)
        if pending is None or pending.copies:
            return False
        del self._pending[request_id]
        waiting = pending.settle()
        if not waiting.done():
            waiting.set_exception(NotDelivered(why or f"nobody listened on {subject} when the call was sent"))
        return True

    def close(self) -> None:
        self._closed = True
        pending, self._pending = self._pending, {}
        for call in pending.values():
            waiting = call.settle()
            if not waiting.done():
                waiting.set_exception(ConnectionLost("the relay closed during the call"))
        for copy in self._copies:
            copy.cancel()


def result_of(response: DirectResponse) -> dict[str, Any]:
    if not response.result:
        return {}
    decoded = msgspec.json.decode(response.result)
    return decoded if isinstance(decoded, dict) else {}


@runtime_checkable
class SupportsDirectCalls(Protocol):
    """A transport whose relay the gateway can also write tool calls to itself."""

    direct: DirectCalls
