"""Parts of the gateway's start and stop that belong to no one area, each a `Lifecycle` so that
its place in the wiring's one order tuple says when it happens.

- `OnStart`: a step taken when its turn in the start order comes (the redactor learns the HTTP
  systems' credentials once the pool has read them, before any endpoint serves).
- `ClosedAtStop`: something built with the gateway and closed at its turn in the stop order (the
  httpx client, after the HTTP systems that call through it stopped).
- `CallsDrained`: at stop, the calls being served are let finish, at most `grace` seconds: after
  the endpoints stopped taking calls, before the ledger and the sessions they use stop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

from services.mcp_gateway.calls.serving import InFlight
from shared.lifecycle import Lifecycle


class OnStart(Lifecycle[None]):
    def __init__(self, name: str, step: Callable[[], None]) -> None:
        super().__init__(name)
        self._step = step

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        self._step()


class ClosedAtStop(Lifecycle[None]):
    def __init__(self, name: str, close: Callable[[], Awaitable[None]]) -> None:
        super().__init__(name)
        self._close = close

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        parts.push_async_callback(self._close)


class CallsDrained(Lifecycle[None]):
    def __init__(self, in_flight: InFlight, grace: float) -> None:
        super().__init__("the calls in flight")
        self.in_flight = in_flight
        self._grace = grace

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        parts.push_async_callback(self.in_flight.wait_idle, self._grace)
