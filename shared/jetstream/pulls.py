"""A batch from a pull consumer, without holding a message back (a workaround of nats-py's fetch).

Each fetch is one pull request with `no_wait` and `expires`: nats-server keeps it waiting while
it has nothing for the consumer, and once it has, delivers up to the batch and ends the request
at once with a 404 status. The client takes messages until that status, or until one says the
server held no more for the consumer when it was sent (its `num_pending`).

nats-py's `PullSubscription.fetch(n)` for n > 1 begins the same way, but takes whatever status
comes first for its request's answer, and a late 408 of an earlier, expired request is often
that status. It then sends a second request, one without `no_wait`, while its first still waits on
the server; such a request stays open after a delivery until it expires. The next message went out
on whichever of them was oldest, and nats-py waited for the rest of that batch until it expired
(the fetch timeout, a second) before handing the message over. Measured on bench-e2e's stack, with
pauses of up to 1.5 s between events: one event in five waited 0.2 to 0.7 s in the event-bridge
(docs/reference/workarounds.md). Here a status that comes before any message while the request
has not expired is taken as an earlier request's, and waited past; no request is sent without
`no_wait`, so none stays open after a delivery; and a message after which the server held nothing
more is handed over without waiting for any status.
"""

from __future__ import annotations

import asyncio
import json

import nats.js.errors
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext

_ENDED = ("404", "408")  # nothing (more) for this request, or it expired
_HEARTBEAT = "100"
_EXPIRY_MARGIN = 0.05  # a status this close to the request's expiry is taken as its own


async def fetch_batch(sub: JetStreamContext.PullSubscription, batch: int, timeout: float) -> list[Msg]:
    """Up to `batch` messages, handed over as soon as the server has delivered what it held;
    raises nats-py's TimeoutError when none came within `timeout`, and its APIError for a status
    that says the consumer cannot be pulled from (deleted, a leader changing, too many waiting)."""
    # nats-py keeps the pull's inbox subscription, request subject and connection private.
    inbox = sub._sub
    loop = asyncio.get_running_loop()
    expires_at = loop.time() + timeout
    request = {"batch": batch, "expires": int(timeout * 1_000_000_000), "no_wait": True}
    await sub._nc.publish(sub._nms, json.dumps(request).encode(), reply=sub._deliver)
    msgs: list[Msg] = []
    while len(msgs) < batch:
        try:
            msg = await inbox.next_msg(timeout=max(expires_at - loop.time(), 0.0) + _EXPIRY_MARGIN)
        except TimeoutError:
            if msgs:
                break  # the request's end did not come (a reconnect): what came is handed over
            raise NatsTimeoutError from None
        status = JetStreamContext.is_status_msg(msg)
        if status is None:
            msgs.append(msg)
            if _pending_after(msg) == 0:  # nothing more was there when it was sent: no need to wait for the end
                break
        elif status == _HEARTBEAT:
            continue
        elif status in _ENDED:
            if msgs or loop.time() >= expires_at - _EXPIRY_MARGIN:
                break
            # An earlier request's end, come late: this request still waits on the server.
        else:
            if msgs:
                break
            raise nats.js.errors.APIError.from_msg(msg)
    if not msgs:
        raise NatsTimeoutError
    return msgs


def _pending_after(msg: Msg) -> int:
    """How many more messages the server held for the consumer when it sent this one."""
    try:
        return int(msg.metadata.num_pending or 0)
    except Exception:  # no JetStream reply subject to read it from: wait for the request's end
        return 1
