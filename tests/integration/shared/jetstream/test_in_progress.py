"""Work that outlasts the ack wait keeps its message: the consume loop tells JetStream it is still
in progress (shared/jetstream/consume_loop.py), so the message is not delivered again meanwhile."""

from __future__ import annotations

import asyncio
import time

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig

from shared.contracts.subjects import Subjects
from shared.jetstream.consume_loop import ACK, AtLeastOnceConsumer, Outcome

ACK_WAIT = 1.0


async def test_work_three_ack_waits_long_is_delivered_once_and_acknowledged(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="LONG", subjects=["long.>"]))
    config = ConsumerConfig(durable_name="long", ack_policy=AckPolicy.EXPLICIT, ack_wait=ACK_WAIT, max_deliver=-1)
    consumer = AtLeastOnceConsumer(js, subjects, stream="LONG", config=config, stage="test", heartbeat=ACK_WAIT / 3)
    await consumer.start()
    deliveries: list[int] = []

    async def handle(msg: Msg) -> Outcome:
        deliveries.append(msg.metadata.num_delivered)
        await asyncio.sleep(ACK_WAIT * 3)
        return ACK

    stop = asyncio.Event()
    loop = asyncio.create_task(consumer.run_each(stop, handle, concurrency=2))  # room for a second delivery
    try:
        await js.publish("long.one", b"slow")
        deadline = time.monotonic() + ACK_WAIT * 10
        while (info := await js.consumer_info("LONG", "long")).ack_floor.stream_seq < 1:  # settled
            assert time.monotonic() < deadline, f"the message was never acknowledged: {info}"
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        await loop
        await consumer.stop()
    assert deliveries == [1]
    assert info.num_redelivered == 0
