"""A NATS subscription whose messages are handled in the connection's read loop, with no task
in between.

Why: nats-py hands every message of a callback subscription to an `asyncio.Queue`, and one task
per subscription awaits that queue and runs the callback. On a relayed tool call that is one
queue and one task wake-up more per message than the work needs: in the gateway for the app's
answer (`…s2c`) and for each JetStream ack of its audit record, in the supervisor for each
message it writes to an app's stdin (`…c2s`). A handler here is a plain function called where
nats-py would have queued the message, in the order messages arrive; it must not block. What has
to wait (a full stream, a slow pipe) is the handler's to queue or refuse, and it says which.

nats-py has no public hook for this: the subscription is made without a callback (so nats-py
starts no task for it) and its pending queue is replaced by `_Handoff`, which takes each message
the read loop would have put there. `tests/integration/test_inline_subscription.py` runs it on a
real connection, so a nats-py release that delivers differently fails there first.
"""

from __future__ import annotations

from collections.abc import Callable

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription

from shared.logs import get_logger

log = get_logger("aurora.inline_subscription")

Handler = Callable[[Msg], None]


class _Handoff:
    """Stands in for the subscription's pending queue: each message goes to `handler` at once.
    Nothing is ever pending, so nats-py's slow-consumer accounting stays at zero."""

    def __init__(self, subscription: Subscription, handler: Handler) -> None:
        self._subscription = subscription
        self._handler = handler

    def put_nowait(self, msg: Msg) -> None:
        self._subscription._pending_size -= len(msg.data)
        try:
            self._handler(msg)
        except Exception:  # raised into nats-py's read loop it would end the connection
            log.exception("a message handler failed", subject=msg.subject)

    def qsize(self) -> int:
        return 0

    def empty(self) -> bool:
        return True

    def full(self) -> bool:
        return False

    def task_done(self) -> None:
        return None

    async def join(self) -> None:  # `Subscription.drain` waits for the queue to be worked off
        return None


async def subscribe_inline(nc: NATS, subject: str, handler: Handler, *, queue: str = "") -> Subscription:
    """Subscribe `handler` to `subject`; unsubscribe as with any nats-py subscription."""
    subscription = await nc.subscribe(subject, queue=queue)
    subscription._pending_queue = _Handoff(subscription, handler)  # type: ignore[assignment]
    return subscription
