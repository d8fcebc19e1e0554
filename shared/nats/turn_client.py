"""nats-py's client with its publishes written at the end of the loop's turn and its requests'
replies taken in the read loop (a workaround: docs/reference/workarounds.md).

Why: every message a service sends goes through nats-py's `publish`, which wakes its flusher
task through an `asyncio.Queue` and a future; every reply to a request (a KV read, a JetStream
publish's ack, a tool call) is queued for a task of the reply inbox's subscription, which then
sets the request's future, and the request waits on that future under `asyncio.wait_for` (a
second future, a callback and a timer). On bench-e2e's path that is some twenty publishes and
seven requests per event, in the router's and the bridge's acks, the runner's look for the task,
its tool call and its task's write, and the gateway's reads and ledger writes.

Here, for a `Connection` (shared/nats/bus.py: every service's and the CLI's):

- `publish` is `shared.nats.write_through.publish`: the message joins nats-py's pending buffer
  as before and is written by one callback once this turn's ready callbacks have run (every
  message of a turn in one write, in nats-py's order); what nats-py has to take (not connected,
  its buffer full, a payload over the limit, a header it refuses) is its own `publish`, with its
  errors and its waiting;
- the request inbox is nats-py's (its `_resp_map`, one wildcard subscription, made at the first
  request), its replies handed to the waiting request in the read loop
  (`shared.nats.inline_subscription`), stream deliveries refused as on every inline
  subscription; a request waits on its future with one timer, and ends as nats-py's does:
  `nats.errors.TimeoutError` when no reply came in time, `NoRespondersError` (raised by nats-py's
  `request`, from the reply's status) when nobody listens.

nats-py has no public hook for either: `tests/integration/shared/nats/test_turn_client.py` runs
them on a real server beside nats-py's own client, so a release that works otherwise fails there.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import nats.errors
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from shared.nats import write_through


class TurnClient(NATS):
    def __init__(self) -> None:
        super().__init__()
        self._reply_prefix = ""  # the request inbox's subjects, without the token: set at the first request
        self._tokens = itertools.count(1)

    async def publish(self, subject: str, payload: bytes = b"", reply: str = "",
                      headers: dict[str, str] | None = None) -> None:
        if not write_through.publish_soon(self, subject, payload, reply=reply, headers=headers):
            await super().publish(subject, payload, reply, headers)

    async def _init_request_sub(self) -> None:
        # Imported here: the guard the hand-off applies reports through shared.nats.bus, which
        # builds its connection on this class.
        from shared.nats.inline_subscription import hand_off

        self._resp_map = {}
        prefix = self._inbox_prefix[:]
        prefix.extend(b".")
        prefix.extend(self._nuid.next())
        prefix.extend(b".")
        # Set before the subscription is made, as nats-py does: a request made meanwhile sees the
        # inbox made and its publish follows the subscription on the wire.
        self._resp_sub_prefix = prefix
        self._reply_prefix = prefix.decode()
        subscription = await self.subscribe(self._reply_prefix + "*")  # no callback: no task, handed off below
        hand_off(subscription, self._reply_prefix + "*", self._on_reply)

    def _on_reply(self, msg: Msg) -> None:
        future = self._resp_map.pop(msg.subject[len(self._reply_prefix):], None)
        if future is not None and not future.done():
            future.set_result(msg)

    async def _request_new_style(self, subject: str, payload: bytes, timeout: float = 1,
                                 headers: dict[str, Any] | None = None) -> Msg:
        if self.is_draining_pubs:
            raise nats.errors.ConnectionDrainingError
        if not self._resp_sub_prefix:
            await self._init_request_sub()
        # A serial number under the connection's own random inbox, as AckedPublisher's: nats-py's
        # new random token per request costs more than the rest of the request's own work.
        token = str(next(self._tokens))
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Msg] = loop.create_future()
        self._resp_map[token] = future
        timer = loop.call_later(timeout, time_out, future)
        try:
            await self.publish(subject, payload, reply=self._reply_prefix + token, headers=headers)
            return await future
        finally:
            timer.cancel()
            self._resp_map.pop(token, None)


def time_out(future: asyncio.Future[Any]) -> None:
    """A timer's end of a wait: the future, unless answered already, raises nats-py's TimeoutError."""
    if not future.done():
        future.set_exception(nats.errors.TimeoutError())
