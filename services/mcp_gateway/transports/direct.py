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
"""

from __future__ import annotations

import asyncio
import itertools
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, runtime_checkable

import msgspec

ID_PREFIX = "aurora-"


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


# Where the request goes: its bytes, and its id for a request (None for a notification).
Publish = Callable[[bytes, str | None], Awaitable[None]]


_decode_response = msgspec.json.Decoder(DirectResponse).decode
_encode = msgspec.json.Encoder().encode


class DirectCalls:
    """Pending requests by id; `send` writes one, `answer` routes a relayed message to it."""

    def __init__(self, publish: Publish) -> None:
        self._publish = publish
        self._ids = itertools.count(1)
        self._pending: dict[str, asyncio.Future[DirectResponse]] = {}
        # Late answers to abandoned requests are ours too: the SDK would warn about an unknown id.
        self._abandoned: deque[str] = deque(maxlen=1024)
        self._closed = False
        # Set by the session: notes a `notifications/progress` for one of its calls in flight
        # (True when it was one). Called here, in the order the app wrote, a note always comes
        # before the answer it preceded; through the SDK's stream it could come after it.
        self.progressed: Callable[[dict[str, Any] | None], bool] | None = None

    async def send(self, method: str, params: dict[str, Any]) -> tuple[str, asyncio.Future[DirectResponse]]:
        if self._closed:
            raise ConnectionLost("the relay is closed")
        request_id = f"{ID_PREFIX}{next(self._ids)}"
        answer: asyncio.Future[DirectResponse] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = answer
        try:
            await self._publish(_encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}),
                                request_id)
        except BaseException:
            self._pending.pop(request_id, None)
            raise
        return request_id, answer

    async def abandon(self, request_id: str, reason: str) -> None:
        """Forget a request (timed out or its caller went away) and tell the app, as MCP asks."""
        if self._pending.pop(request_id, None) is None or self._closed:
            return
        self._abandoned.append(request_id)
        cancelled = {"requestId": request_id, "reason": reason}
        await self._publish(_encode({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancelled}),
                            None)

    def answer(self, data: bytes) -> bool:
        """True when `data` answered one of our requests or was progress of one (and is
        consumed); anything else — the SDK's responses, other notifications, server requests,
        junk — is the SDK's to read."""
        if not self._pending and not self._abandoned:
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
        waiting = self._pending.pop(response.id, None)
        if waiting is None:
            return response.id in self._abandoned
        if not waiting.done():
            waiting.set_result(response)
        return True

    def unheard(self, request_id: str, subject: str) -> bool:
        """nats-server found nobody listening on `subject` when the request went out: the call
        fails as not delivered. False: not a request waiting here (answered or given up)."""
        waiting = self._pending.pop(request_id, None)
        if waiting is None:
            return False
        if not waiting.done():
            waiting.set_exception(NotDelivered(f"nobody listened on {subject} when the call was sent"))
        return True

    def close(self) -> None:
        self._closed = True
        pending, self._pending = self._pending, {}
        for waiting in pending.values():
            if not waiting.done():
                waiting.set_exception(ConnectionLost("the relay closed during the call"))


def result_of(response: DirectResponse) -> dict[str, Any]:
    if not response.result:
        return {}
    decoded = msgspec.json.decode(response.result)
    return decoded if isinstance(decoded, dict) else {}


@runtime_checkable
class SupportsDirectCalls(Protocol):
    """A transport whose relay the gateway can also write tool calls to itself."""

    direct: DirectCalls
