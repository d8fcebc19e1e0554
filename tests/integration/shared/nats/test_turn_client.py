"""shared/nats/turn_client.py on a real server: a Connection's requests get their own replies, in
any order, taken in the read loop; they end as nats-py's do (its timeout error, no responders);
nothing is left waiting after a timeout or a cancel; a stream delivery pointed at the request
inbox is refused, not taken for a reply; and its publishes go out in order, through nats-py's
own publish while NATS is away."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import ConsumerConfig, StreamConfig

from shared.nats.bus import Connection
from shared.nats.inline_subscription import subscribe_inline
from shared.nats.request_guard import RefusedDelivery
from tests.harness.broker import Broker
from tests.harness.waiting import poll


def _connection(nc: NATS) -> Connection:
    assert isinstance(nc, Connection), "the test client is the services' Connection"
    return nc


async def test_concurrent_requests_each_get_their_own_reply_answered_in_any_order(nc: NATS) -> None:
    held: list[Msg] = []

    async def answer_all_in_reverse() -> None:
        for msg in reversed(held):
            await msg.respond(b"re:" + msg.data)

    def hold(msg: Msg) -> None:
        held.append(msg)
        if len(held) == 20:
            asyncio.get_running_loop().create_task(answer_all_in_reverse())

    await subscribe_inline(nc, "tc.echo", hold)
    await nc.flush()
    replies = await asyncio.gather(*(nc.request("tc.echo", b"%d" % n, timeout=5) for n in range(20)))
    assert [reply.data for reply in replies] == [b"re:%d" % n for n in range(20)]
    assert _connection(nc)._resp_map == {}  # nothing left waiting


async def test_a_request_with_headers_reaches_the_responder_with_them(nc: NATS) -> None:
    async def echo_headers(msg: Msg) -> None:
        await msg.respond(repr(sorted((msg.headers or {}).items())).encode())

    await nc.subscribe("tc.headers", cb=echo_headers)
    reply = await nc.request("tc.headers", b"", timeout=5, headers={"X-One": "1", "X-Two": "zwei"})
    assert reply.data == repr([("X-One", "1"), ("X-Two", "zwei")]).encode()


async def test_a_request_nobody_answers_in_time_raises_nats_py_s_timeout_and_leaves_nothing(nc: NATS) -> None:
    heard: list[Msg] = []
    await subscribe_inline(nc, "tc.silent", heard.append)  # listens, never answers
    await nc.flush()
    with pytest.raises(NatsTimeoutError):
        await nc.request("tc.silent", b"?", timeout=0.2)
    assert len(heard) == 1 and _connection(nc)._resp_map == {}


async def test_a_request_nobody_listens_to_raises_no_responders(nc: NATS) -> None:
    with pytest.raises(NoRespondersError):
        await nc.request("tc.nobody", b"?", timeout=5)
    assert _connection(nc)._resp_map == {}


async def test_a_cancelled_request_leaves_nothing_waiting(nc: NATS) -> None:
    heard: list[Msg] = []
    await subscribe_inline(nc, "tc.slow", heard.append)
    await nc.flush()
    asking = asyncio.ensure_future(nc.request("tc.slow", b"?", timeout=30))
    await poll(lambda: _true_when(bool(heard)), what="the request to arrive")
    asking.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await asking
    assert asking.cancelled() and _connection(nc)._resp_map == {}


async def test_a_stream_delivery_pointed_at_the_request_inbox_is_not_taken_for_the_reply(nc: NATS) -> None:
    """Anyone who may make a push consumer can point it at any subject: a delivery carries an ack
    subject as its reply, and the inbox refuses it; the request gets its real reply after it."""
    held: list[Msg] = []
    await subscribe_inline(nc, "tc.held", held.append)
    await nc.flush()
    connection = _connection(nc)
    refused: list[RefusedDelivery] = []
    connection.refusal_sink = refused.append
    asking = asyncio.ensure_future(nc.request("tc.held", b"?", timeout=10))
    await poll(lambda: _true_when(bool(held)), what="the request to arrive")
    inbox = held[0].reply
    assert inbox is not None and inbox.startswith(connection._reply_prefix)
    # With only the inbox's wildcard subscription, nats-server left the consumer unbound and
    # delivered nothing: a subscription on the exact subject binds it.
    await nc.subscribe(inbox)
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="TC_FORGED", subjects=["tc.forged"]))
    await js.add_consumer("TC_FORGED", ConsumerConfig(durable_name="forger", deliver_subject=inbox))
    ack = await js.publish("tc.forged", b"forged answer")
    await poll(lambda: _true_when(bool(refused)), what="the forged message's refusal")
    assert (refused[0].endpoint, refused[0].stream, refused[0].sequence) == (
        connection._reply_prefix + "*", "TC_FORGED", str(ack.seq))
    assert not asking.done()
    await held[0].respond(b"the real answer")
    assert (await asking).data == b"the real answer"


async def test_publishes_arrive_in_order_and_one_made_while_nats_is_away_after_it_is_back(
        nc: NATS, broker: Broker) -> None:
    got: list[bytes] = []
    await subscribe_inline(nc, "tc.order", lambda msg: got.append(msg.data))
    await nc.flush()
    for n in range(500):
        await nc.publish("tc.order", b"%d" % n)
    await poll(lambda: _true_when(len(got) == 500), what="every message")
    assert got == [b"%d" % n for n in range(500)]
    broker.stop()
    await poll(lambda: _true_when(not nc.is_connected), what="the client to notice the server is gone")
    await nc.publish("tc.order", b"during")  # nats-py's own publish buffers it
    broker.restart()
    await poll(lambda: _true_when(nc.is_connected), what="the client to reconnect")
    await nc.publish("tc.order", b"after")
    await poll(lambda: _true_when(len(got) == 502), what="the buffered message and the next")
    assert got[500:] == [b"during", b"after"]


async def _true_when(condition: bool) -> bool:
    return condition
