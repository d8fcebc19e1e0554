"""shared/nats/write_through.py on a real connection: a message queued by `publish_soon` is the message
nats-py would have sent (subject, reply, headers, counted in its stats), written with everything
else published in the same turn of the loop, in order with nats-py's own publishes; what nats-py
has to take (NATS away, a payload or header it refuses) goes through nats-py, with its buffering
and its errors."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sized
from urllib.parse import urlsplit

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import BadHeaderError, MaxPayloadError
from nats.micro import add_service
from nats.micro.request import Request

from shared.nats import write_through
from shared.nats.inline_subscription import subscribe_inline
from tests.harness.broker import Broker
from tests.harness.clients import nats_client
from tests.harness.waiting import poll


async def test_a_message_queued_arrives_whole_with_its_reply_and_headers(nc: NATS) -> None:
    got: list[Msg] = []
    sub = await subscribe_inline(nc, "wt.whole", got.append)
    await write_through.flush(nc)
    sent_before = nc.stats["out_msgs"]
    payload = "你好, write-through".encode() * 100
    assert write_through.publish_soon(nc, "wt.whole", payload, reply="wt.reply.1",
                                      headers={"Nats-Msg-Id": "m-1", "X-Two": " spaced \r\nvalue "})
    assert write_through.publish_soon(nc, "wt.whole")  # nothing but the subject: an empty message
    assert nc.stats["out_msgs"] == sent_before + 2  # counted as nats-py counts its own
    await poll(_count(got, 2), what="both messages")
    first, second = got
    assert (first.subject, first.reply, first.data) == ("wt.whole", "wt.reply.1", payload)
    assert first.headers == {"Nats-Msg-Id": "m-1", "X-Two": "spaced   value"}  # as nats-py writes a value
    assert (second.data, second.reply, second.headers) == (b"", "", None)
    await sub.unsubscribe()


async def test_a_turns_messages_leave_in_one_write_by_a_callback_not_the_flusher(nc: NATS) -> None:
    await write_through.flush(nc)
    for n in range(50):
        assert write_through.publish_soon(nc, "wt.batch", b"%d" % n)
    assert len(nc._pending) == 50 and nc._flush_queue is not None and nc._flush_queue.empty()
    await asyncio.sleep(0)  # the turn ends: the callback has written them
    assert nc._pending == [] and nc._pending_data_size == 0
    assert nc._flush_queue.empty()  # nats-py's flusher was never asked


async def test_order_is_kept_with_nats_pys_own_publishes_in_between(nc: NATS) -> None:
    got: list[bytes] = []
    await subscribe_inline(nc, "wt.order", lambda msg: got.append(msg.data))
    await write_through.flush(nc)
    sent: list[bytes] = []
    for n in range(3000):
        data = str(n).encode() * (1 + n % 40)
        sent.append(data)
        if n % 3 == 0:
            await NATS.publish(nc, "wt.order", data)  # nats-py's own (a Connection's `publish` is write-through)
        else:
            assert write_through.publish_soon(nc, "wt.order", data)
        if n % 7 == 0:
            await asyncio.sleep(0)  # the callback and nats-py's flusher get their turns now and then
    await poll(_count(got, len(sent)), what="every message")
    assert got == sent


async def test_a_publish_while_nats_is_away_is_buffered_by_nats_py_and_arrives_after(
        nc: NATS, broker: Broker) -> None:
    got: list[bytes] = []
    await subscribe_inline(nc, "wt.away", lambda msg: got.append(msg.data))
    await write_through.flush(nc)
    broker.stop()
    await poll(_connected(nc, False), what="the client to notice the server is gone")
    assert not write_through.publish_soon(nc, "wt.away", b"during")
    await write_through.publish(nc, "wt.away", b"during")  # buffered in nats-py's pending
    broker.restart()
    await poll(_connected(nc, True), what="the client to reconnect")
    await write_through.publish(nc, "wt.away", b"after")
    await poll(_count(got, 2), what="the buffered message and the next one")
    assert got == [b"during", b"after"]


async def test_what_nats_py_refuses_is_refused_with_its_own_error(nc: NATS) -> None:
    too_big = b"x" * (nc.max_payload + 1)
    assert not write_through.publish_soon(nc, "wt.refused", too_big)
    with pytest.raises(MaxPayloadError):
        await write_through.publish(nc, "wt.refused", too_big)
    assert not write_through.publish_soon(nc, "wt.refused", b"x", headers={"bad key": "v"})
    with pytest.raises(BadHeaderError):
        await write_through.publish(nc, "wt.refused", b"x", headers={"bad key": "v"})


async def test_a_micro_reply_goes_back_to_the_requester(nc: NATS) -> None:
    async def handler(request: Request) -> None:
        await write_through.respond(request, b"pong:" + request.data)

    service = await add_service(nc, name="wt-service", version="1.0.0")
    await service.add_endpoint(name="ping", subject="wt.ping", handler=handler)
    reply = await nc.request("wt.ping", b"1", timeout=5)
    assert reply.data == b"pong:1"
    await service.stop()


def _count(got: Sized, n: int) -> Callable[[], Awaitable[bool]]:
    async def probe() -> bool:
        return len(got) >= n
    return probe


def _connected(nc: NATS, connected: bool) -> Callable[[], Awaitable[bool]]:
    async def probe() -> bool:
        return nc.is_connected == connected
    return probe


async def test_flush_sends_its_ping_behind_a_subscription_just_made(nats_url: str) -> None:
    """nats-py writes a flush's PING straight to the socket, ahead of a SUB still in its buffer;
    `write_through.flush` puts the buffer on the wire first, so the PONG vouches for the SUB."""
    sent = bytearray()  # what the client wrote, in the order the server gets it
    upstream = urlsplit(nats_url)
    relays: list[asyncio.Task[None]] = []

    async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter, record: bool) -> None:
        try:
            while data := await source.read(65536):
                if record:
                    sent.extend(data)
                sink.write(data)
                await sink.drain()
        finally:
            sink.close()
            with contextlib.suppress(OSError):
                await sink.wait_closed()

    async def relay(client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter) -> None:
        relays.append(asyncio.current_task())  # type: ignore[arg-type]
        server_in, server_out = await asyncio.open_connection(upstream.hostname, upstream.port)
        await asyncio.gather(pipe(client_in, server_out, True), pipe(server_in, client_out, False),
                             return_exceptions=True)

    proxy = await asyncio.start_server(relay, "127.0.0.1", 0)
    port = proxy.sockets[0].getsockname()[1]
    try:
        async with nats_client(f"nats://127.0.0.1:{port}") as client:
            began = len(sent)
            await client.subscribe("wt.flushed")
            await write_through.flush(client)
            wire = bytes(sent[began:])
            assert b"SUB wt.flushed" in wire and b"PING" in wire, wire
            assert wire.index(b"SUB wt.flushed") < wire.index(b"PING"), wire
    finally:
        proxy.close()
        await proxy.wait_closed()
        await asyncio.wait_for(asyncio.gather(*relays), 10)  # the client's close ends both pipes
