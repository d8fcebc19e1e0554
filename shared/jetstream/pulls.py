"""A batch from a pull consumer, without holding its first message back (a workaround).

nats-py's `PullSubscription.fetch(n)` for n > 1 begins with a pull request carrying both `no_wait`
and `expires`, which nats-server keeps waiting like any pull with `expires`. A message that
arrives while it waits is delivered at once, but nats-py then waits for the rest of the batch
until that request expires (the fetch timeout, a second) before it hands the first one over.
Measured on the event path: after a pause of up to 1.5 s between events, one event in five
waited 0.2 to 0.7 s in the event-bridge (docs/reference/workarounds.md).

So a batch is taken in two steps: wait for one message (nats-py's `fetch(1)`, which returns as
soon as it comes), then take what else is there with a pull request that has `no_wait` and no
`expires`, which the server answers at once with what it holds and a status. Under load the
first step finds a message waiting, so a batch is still a batch.
"""

from __future__ import annotations

import asyncio
import json

from nats.aio.msg import Msg
from nats.js import JetStreamContext

# Status codes that end a pull request: nothing (more) to deliver, or the request expired.
_ENDED = ("404", "408")


async def fetch_batch(sub: JetStreamContext.PullSubscription, batch: int, timeout: float) -> list[Msg]:
    """Up to `batch` messages, returned as soon as one has come; raises nats-py's TimeoutError
    when none came within `timeout`."""
    msgs = await sub.fetch(1, timeout=timeout)
    if batch > 1 and msgs:
        msgs.extend(await _waiting(sub, batch - len(msgs), timeout))
    return msgs


async def _waiting(sub: JetStreamContext.PullSubscription, wanted: int, timeout: float) -> list[Msg]:
    """What the consumer holds for us now, up to `wanted`, without waiting for more to come."""
    # nats-py keeps the pull's inbox subscription and its request subject private.
    inbox = sub._sub
    request = json.dumps({"batch": wanted, "no_wait": True}).encode()
    await sub._nc.publish(sub._nms, request, reply=sub._deliver)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    msgs: list[Msg] = []
    while len(msgs) < wanted:
        try:
            msg = await inbox.next_msg(timeout=max(deadline - loop.time(), 0.001))
        except TimeoutError:  # the server did not answer: what came is kept, the rest comes next time
            break
        status = JetStreamContext.is_status_msg(msg)
        if status is None:
            msgs.append(msg)
        elif status in _ENDED:  # this request's end, or an earlier one's: either way, enough for now
            break
    return msgs
