"""JetStream publishes acknowledged together (shared/acked_publish.py) and the gateway's outbox
that sends through them: stored in order, errors as `js.publish` raises them, nothing lost
while the stream is missing. Real nats-server."""

from __future__ import annotations

import asyncio

import pytest
from nats.aio.client import Client as NATS
from nats.js.errors import APIError, NoStreamResponseError

from services.mcp_gateway.outbox import Outbox
from shared.acked_publish import AckedPublisher
from tests.harness.waiting import poll


async def test_a_batch_is_stored_in_order_and_each_future_is_its_sequence(nc: NATS) -> None:
    js = nc.jetstream()
    await js.add_stream(name="ACKS", subjects=["acks.>"])
    acks = AckedPublisher(nc)
    futures = [await acks.send(f"acks.{n}", str(n).encode(), headers={"Nats-Msg-Id": f"m{n}"}) for n in range(20)]
    assert await asyncio.gather(*futures) == list(range(1, 21))
    assert [(await js.get_msg("ACKS", seq)).data for seq in (1, 20)] == [b"0", b"19"]
    # The same message id again is a duplicate: acknowledged with the stored sequence, not stored twice.
    assert await acks.publish("acks.3", b"again", headers={"Nats-Msg-Id": "m3"}) == 4
    assert (await js.stream_info("ACKS")).state.messages == 20
    assert acks.in_flight == 0
    await acks.close()


async def test_no_stream_and_a_refused_publish_fail_as_js_publish_does(nc: NATS) -> None:
    js = nc.jetstream()
    await js.add_stream(name="ACKS", subjects=["acks.>"])
    acks = AckedPublisher(nc)
    with pytest.raises(NoStreamResponseError):
        await acks.publish("nobody.stores.this", b"x")
    with pytest.raises(APIError) as refused:  # the stream named in the header is not the one that would store it
        await acks.publish("acks.1", b"x", headers={"Nats-Expected-Stream": "OTHER"})
    assert refused.value.err_code == 10060, refused.value
    assert acks.in_flight == 0
    await acks.close()


async def test_the_outbox_keeps_what_it_could_not_store_until_the_stream_exists(nc: NATS) -> None:
    js = nc.jetstream()
    acks = AckedPublisher(nc)
    attempts: list[int] = []

    async def send(n: int) -> asyncio.Future[int]:
        attempts.append(n)
        return await acks.send(f"later.{n}", str(n).encode(), headers={"Nats-Msg-Id": f"later-{n}"})

    async def retried() -> bool:
        return len(attempts) > 5  # the five went out once, failed, and the first is being tried again

    outbox: Outbox[int] = Outbox("test", send, ack_timeout=2.0)
    outbox.start()
    for n in range(5):
        outbox.put(n)
    await poll(retried, timeout=10, what="a failed publish retried")
    await js.add_stream(name="LATER", subjects=["later.>"])
    for n in range(5, 10):
        outbox.put(n)
    await outbox.stop(timeout=20)
    assert outbox.dropped == 0
    stored = [int((await js.get_msg("LATER", seq)).data) for seq in range(1, 11)]
    assert sorted(stored) == list(range(10))
    assert (await js.stream_info("LATER")).state.messages == 10
    await acks.close()
