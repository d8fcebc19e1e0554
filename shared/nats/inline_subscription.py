"""A NATS subscription whose messages are handled in the connection's read loop, with no task
in between.

Why: nats-py hands every message of a callback subscription to an `asyncio.Queue`, and one task
per subscription awaits that queue and runs the callback. On a relayed tool call that is one
queue and one task wake-up more per message than the work needs: in the gateway for the app's
answer (`…s2c`) and for each JetStream ack of its audit record (and of every other
`AckedPublisher`'s message), in the supervisor for each
message it writes to an app's stdin (`…c2s`), and for the gateway's tool-call endpoints, whose
handler only starts a task for the call (`add_inline_endpoint`). A handler here is a plain
function called where nats-py would have queued the message, in the order messages arrive; it
must not block. What has to wait (a full stream, a slow pipe) is the handler's to queue or
refuse, and it says which.

nats-py has no public hook for this: the subscription is made without a callback (so nats-py
starts no task for it) and its pending queue is replaced by `_Handoff`, which takes each message
the read loop would have put there. An endpoint is added by nats.micro as any other and then
gets the same hand-off. `tests/integration/shared/nats/test_inline_subscription.py` runs both on a real
connection, so a nats-py release that delivers differently fails there first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.micro.request import Request
from nats.micro.service import Endpoint, Service

from shared.nats.request_guard import refused_message, refusing_deliveries_inline
from shared.observability.logs import get_logger

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
    """Subscribe `handler` to `subject` (stream deliveries refused, shared/nats/request_guard.py);
    unsubscribe as with any nats-py subscription."""
    subscription = await nc.subscribe(subject, queue=queue)
    hand_off(subscription, subject, handler)
    return subscription


def hand_off(subscription: Subscription, endpoint: str, handler: Handler) -> None:
    """From now on each message of `subscription` (made without a callback) goes to `handler`,
    stream deliveries refused as `endpoint`'s."""
    _hand_off(subscription, refusing_deliveries_inline(endpoint, handler))


def hand_off_deliveries(subscription: Subscription, handler: Handler) -> None:
    """From now on each message of `subscription` (made without a callback) goes to `handler`,
    stream deliveries included: for the inbox of a pull consumer's own requests
    (shared/jetstream/pulls.py), whose messages are the stream's deliveries."""
    _hand_off(subscription, handler)


def _hand_off(subscription: Subscription, handler: Handler) -> None:
    """From now on each message of `subscription` goes to `handler`. Those the read loop queued
    while the subscription was being made go first, in order; no await lies in between, so none
    can arrive meanwhile. A task nats-py started to work off the queue is stopped: it would find
    the hand-off where it looks for its queue."""
    queued = subscription._pending_queue
    handoff = _Handoff(subscription, handler)
    subscription._pending_queue = handoff  # type: ignore[assignment]
    if subscription._wait_for_msgs_task is not None:
        subscription._wait_for_msgs_task.cancel()
    while not queued.empty():
        handoff.put_nowait(queued.get_nowait())


RequestHandler = Callable[[Request], None]


async def add_inline_endpoint(service: Service, *, name: str, subject: str, handler: RequestHandler) -> None:
    """A nats.micro endpoint whose requests reach `handler` in the read loop, with no task in
    between: the endpoint is the service's like any other (its INFO lists it, its STATS count
    requests, errors and processing time), only its subscription hands messages over at once.
    For a handler that only starts the work (a tool call gets a task of its own): with a task
    per endpoint in between, each request waited for one more wake-up before it was started."""

    async def queued(request: Request) -> None:  # nats.micro's to hold; the hand-off takes every message
        handler(request)

    await service.add_endpoint(name=name, subject=subject, handler=queued)
    endpoint = service._endpoints[-1]
    subscription = endpoint._subscription
    assert endpoint._name == name and subscription is not None, "nats.micro added the endpoint elsewhere"
    _hand_off(subscription, partial(_counted, endpoint, handler))


def _counted(endpoint: Endpoint, handler: RequestHandler, msg: Msg) -> None:
    """What nats.micro's own request handling counts, for one request handled here."""
    started = time.perf_counter_ns()
    endpoint._num_requests += 1
    try:
        if refused_message(msg, endpoint=endpoint._name):  # counted, and not served
            return
        handler(Request(msg))
    except Exception as error:
        endpoint._num_errors += 1
        endpoint._last_error = repr(error)  # type: ignore[assignment]
        raise
    finally:
        endpoint._processing_time += time.perf_counter_ns() - started
        endpoint._average_processing_time = int(endpoint._processing_time / endpoint._num_requests)
