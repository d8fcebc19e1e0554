"""subscribe_inline on a real connection: each message reaches its handler in nats-py's read loop,
in order, with nothing left pending; a failing handler costs only its message."""

from __future__ import annotations

import asyncio

import nats
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from shared.inline_subscription import subscribe_inline


def _read_loop_running() -> bool:
    task = asyncio.current_task()
    return task is not None and "_read_loop" in task.get_coro().__qualname__  # type: ignore[union-attr]


async def test_messages_reach_the_handler_in_the_read_loop_in_order_with_nothing_pending(nc: NATS) -> None:
    got: list[bytes] = []
    in_read_loop: list[bool] = []
    all_in = asyncio.Event()

    def handler(msg: Msg) -> None:
        got.append(msg.data)
        in_read_loop.append(_read_loop_running())
        if len(got) == 2000:
            all_in.set()

    sub = await subscribe_inline(nc, "inline.order", handler)
    await nc.flush()
    sent = [str(n).encode() * 50 for n in range(2000)]
    for data in sent:
        await nc.publish("inline.order", data)
    await asyncio.wait_for(all_in.wait(), 10)
    assert got == sent
    assert all(in_read_loop)  # no task between the socket and the handler
    assert sub.pending_msgs == 0 and sub.pending_bytes == 0  # nats-py's slow-consumer count stays at zero
    await sub.unsubscribe()


async def test_a_failing_handler_loses_only_its_message_and_the_connection_stays_up(nc: NATS) -> None:
    got: list[bytes] = []
    second = asyncio.Event()

    def handler(msg: Msg) -> None:
        if msg.data == b"bad":
            raise ValueError("this message breaks the handler")
        got.append(msg.data)
        second.set()

    await subscribe_inline(nc, "inline.fail", handler)

    async def echo(msg: Msg) -> None:
        await msg.respond(msg.data)

    await nc.subscribe("inline.echo", cb=echo)
    await nc.publish("inline.fail", b"bad")
    await nc.publish("inline.fail", b"good")
    await asyncio.wait_for(second.wait(), 10)
    assert got == [b"good"]
    assert (await nc.request("inline.echo", b"still up", timeout=5)).data == b"still up"
    assert nc.is_connected


async def test_unsubscribe_and_drain_end_delivery(nats_url: str) -> None:
    client = await nats.connect(nats_url)
    other = await nats.connect(nats_url)
    try:
        got: list[bytes] = []
        first = asyncio.Event()

        def handler(msg: Msg) -> None:
            got.append(msg.data)
            first.set()

        sub = await subscribe_inline(client, "inline.stop", handler)
        await client.flush()
        await other.publish("inline.stop", b"one")
        await asyncio.wait_for(first.wait(), 10)
        await sub.unsubscribe()
        await client.flush()
        witness = asyncio.Event()

        async def seen(_: Msg) -> None:
            witness.set()

        await client.subscribe("inline.stop", cb=seen)  # a positive sign the next message was delivered
        await client.flush()
        await other.publish("inline.stop", b"two")
        await asyncio.wait_for(witness.wait(), 10)
        assert got == [b"one"]
        await subscribe_inline(client, "inline.drained", handler)
        await asyncio.wait_for(client.drain(), 10)  # the stand-in queue has nothing to wait for
        assert client.is_closed
    finally:
        await other.close()
        if not client.is_closed:
            await client.close()
