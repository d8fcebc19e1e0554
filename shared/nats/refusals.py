"""Publishes nats-server refused on a connection, so a request the caller may not make fails at
once, saying so, instead of waiting out its timeout.

nats-server drops a publish its permissions refuse and tells the client only through an error
(`Permissions Violation for Publish to "<subject>"`), which nats-py hands to the connection's
error callback; the request itself is never answered. A person whose role does not allow an
operation (a viewer's `approvals grant`) was told "did not answer within 5s". A connection
made with `PublishRefusals.error_callback` and registered with `watch` (kept on the connection,
`shared.nats.bus.Connection`) lets `request` race the answer against the refusal.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from shared.errors import AuroraError
from shared.nats.bus import Connection

_VIOLATION = re.compile(r'permissions violation for publish to "([^"]+)"', re.IGNORECASE)


class PublishRefused(AuroraError):
    """nats-server refused to let this identity publish the request's subject."""

    def __init__(self, subject: str) -> None:
        super().__init__(f"not permitted: nats-server refused this identity's request on {subject}")
        self.subject = subject


class PublishRefusals:
    """The refusals one connection was told of, and the requests waiting to hear of theirs."""

    def __init__(self) -> None:
        self._waiting: dict[str, list[asyncio.Future[None]]] = {}

    async def error_callback(self, error: Exception) -> None:
        found = _VIOLATION.search(str(error))
        if found is None:
            return
        for waiter in self._waiting.get(found.group(1), []):
            if not waiter.done():
                waiter.set_result(None)

    async def request(self, nc: NATS, subject: str, payload: bytes, *, timeout: float) -> Msg:
        """`nc.request`, or PublishRefused as soon as the server refuses the publish."""
        refused: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(subject, []).append(refused)
        answer = asyncio.ensure_future(nc.request(subject, payload, timeout=timeout))
        try:
            either: set[asyncio.Future[Any]] = {answer, refused}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if refused.done() and not answer.done():
                answer.cancel()
                raise PublishRefused(subject)
            return answer.result()
        finally:
            waiting = self._waiting.get(subject, [])
            if refused in waiting:
                waiting.remove(refused)
            if not waiting:
                self._waiting.pop(subject, None)
            if not answer.done():
                answer.cancel()


def watch(nc: Connection, refusals: PublishRefusals) -> None:
    """Requests on `nc` (made with `refusals.error_callback`) learn of their refusals."""
    nc.publish_refusals = refusals


def refusals_of(nc: NATS) -> PublishRefusals | None:
    return nc.publish_refusals if isinstance(nc, Connection) else None
