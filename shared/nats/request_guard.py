"""Requests come from publishers, never from a stream: every subscription that answers or acts
on what it hears refuses JetStream deliveries, here, in one place.

Why: nats-server does not check a push consumer's deliver subject against its creator's
permissions (nats-io/nats-server#8274), and any identity that may create a consumer on a
stream (a service's own KV watchers, the external consumer's `consumer_…`) can point one at any
subject. Whoever can also write that stream (the scheduler its schedules, mcp-edge its tokens,
the router its bindings) chooses the bytes delivered: a "sampling request" to the runners, an
"answer" to a client's question, an admin command. nats-server keeps the message's own subject
(`$KV.AMP_SCHEDULES.x`) and sets the reply subject to the consumer's ack subject
(`$JS.ACK.<stream>.<consumer>.…`), which no publisher can choose; that is what is refused.

A refusal is logged at warning level with the stream and consumer that delivered it (the
consumer's name says whose it is: services name theirs `<user>_eph_…`, nats-server's
`$JS.EVENT.ADVISORY.CONSUMER.CREATED` says which client created it) and the endpoint it was
pointed at, and audited by the refusing service: the sink the connection that heard it carries
(`shared.nats.bus.Connection.refusal_sink`, set by shared/service.py; the record is made in
shared/nats/refusal_audit.py), so a process running several services audits each refusal as the
service that refused it. Nothing is answered: the reply subject is an ack, and an ack would only
advance the attacker's consumer.

Use: `add_admin_endpoint` and `add_inline_endpoint` (nats.micro endpoints) and
`subscribe_inline` apply it themselves; a plain `nc.subscribe(…, cb=…)` that serves or acts
wraps its callback in `refusing_deliveries` (tests/unit/shared/nats/test_request_guard.py finds any that
does not).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from nats.aio.msg import Msg

from shared.nats.bus import Connection, is_jetstream_delivery
from shared.observability.logs import get_logger

log = get_logger("aurora.request_guard")

REASON = "a JetStream delivery is not a request: its consumer can be pointed at any subject"
_ACK = "$JS.ACK."


def delivering_consumer(reply: str) -> tuple[str, str]:
    """(stream, consumer) of an ack subject, in both of nats-server's forms:
    `$JS.ACK.<stream>.<consumer>.<7 numbers>` and, with a domain and account hash,
    `$JS.ACK.<domain>.<account>.<stream>.<consumer>.<8 tokens>`."""
    tokens = reply[len(_ACK):].split(".")
    if len(tokens) >= 10:
        return tokens[2], tokens[3]
    if len(tokens) >= 2:
        return tokens[0], tokens[1]
    return "?", "?"


def delivered_sequence(reply: str) -> str:
    """The stream sequence of the delivered message, from its ack subject ("?" when not there)."""
    tokens = reply[len(_ACK):].split(".")
    if len(tokens) >= 10:
        return tokens[5]
    return tokens[3] if len(tokens) >= 7 else "?"


@dataclass(frozen=True)
class RefusedDelivery:
    endpoint: str  # where the consumer delivered it
    subject: str  # the message's own: a delivery keeps the subject it was stored under
    stream: str
    consumer: str
    sequence: str  # of the message in its stream: one refusal of it, however often redelivered


# Called in nats-py's read loop for inline handlers: it must not block.
RefusalSink = Callable[[RefusedDelivery], None]


def refusal_sink_of(msg: Msg) -> RefusalSink | None:
    """Where the connection that received `msg` reports its refusals; None on a connection made
    without `shared.nats.bus` (logged only)."""
    client = getattr(msg, "_client", None)  # nats-py keeps a message's connection private
    return client.refusal_sink if isinstance(client, Connection) else None


def refused_delivery(subject: str, reply: str | None, *, endpoint: str, report: RefusalSink | None = None) -> bool:
    """True (logged, and given to `report`) when the message is a stream delivery that
    `endpoint` must not take."""
    if not is_jetstream_delivery(reply):
        return False
    assert reply is not None
    stream, consumer = delivering_consumer(reply)
    log.warning("stream delivery refused", endpoint=endpoint, subject=subject, stream=stream,
                consumer=consumer, reason=REASON)
    refusal = RefusedDelivery(endpoint, subject, stream, consumer, delivered_sequence(reply))
    if report is not None:
        try:
            report(refusal)
        except Exception:  # the refusal stands whatever becomes of its record
            log.exception("a refusal could not be audited", endpoint=endpoint, consumer=consumer)
    return True


def refused_message(msg: Msg, *, endpoint: str) -> bool:
    """`refused_delivery` for a message, reported where its connection reports refusals."""
    return refused_delivery(msg.subject, msg.reply, endpoint=endpoint, report=refusal_sink_of(msg))


MsgHandler = Callable[[Msg], Awaitable[None]]


def refusing_deliveries(endpoint: str, handler: MsgHandler) -> MsgHandler:
    """`handler` for a plain subscription (`nc.subscribe(subject, cb=…)`), stream deliveries refused."""

    async def guarded(msg: Msg) -> None:
        if refused_message(msg, endpoint=endpoint):
            return
        await handler(msg)

    return guarded


def refusing_deliveries_inline(endpoint: str, handler: Callable[[Msg], None]) -> Callable[[Msg], None]:
    """The same for a handler called in nats-py's read loop (`shared.nats.inline_subscription`)."""

    def guarded(msg: Msg) -> None:
        if refused_message(msg, endpoint=endpoint):
            return
        handler(msg)

    return guarded
