"""A batch of JetStream publishes whose acknowledgements are awaited together, once.

The hot-path stages (the bridge, the router) publish a whole batch through `AckedPublisher`,
then settle each message by whether what it published was stored. `AckBatch` holds each
publish's ack future under the key of what it was for, waits for them all under one deadline
(publishes lost with a dropped connection never get an answer, and waiting for each in turn
would stall for batch × timeout) and says, per key, why it failed: no acknowledgement in time,
given up on, or the server's own error. Futures not answered in time are cancelled, so the
publisher stops waiting for them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")


class AckBatch(Generic[K]):
    def __init__(self, timeout: float, *, success: Callable[[BaseException], bool] | None = None) -> None:
        """`success` says which errors mean "stored" (a create-only write of what exists already)."""
        self._timeout = timeout
        self._success = success
        self._pending: list[tuple[K, asyncio.Future[int]]] = []

    def add(self, key: K, ack: asyncio.Future[int]) -> None:
        """`ack` is `AckedPublisher.send`'s future for what `key` published."""
        self._pending.append((key, ack))

    def __len__(self) -> int:
        return len(self._pending)

    async def settle(self) -> list[tuple[K, str | None]]:
        """Every key in the order added, with why its publish failed (None: stored). Waits at most
        the timeout, once for the whole batch; the batch is empty afterwards."""
        pending, self._pending = self._pending, []
        if pending:
            await asyncio.wait([ack for _, ack in pending], timeout=self._timeout)
        return [(key, self._failure(ack)) for key, ack in pending]

    def _failure(self, ack: asyncio.Future[int]) -> str | None:
        if not ack.done():
            ack.cancel()  # given up on: its ack is no longer waited for
            return f"no acknowledgement within {self._timeout}s"
        if ack.cancelled():
            return "cancelled"
        error = ack.exception()
        if error is None or (self._success is not None and self._success(error)):
            return None
        return describe(error)


def describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
