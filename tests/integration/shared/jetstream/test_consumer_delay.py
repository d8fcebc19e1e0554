"""A handler that knows when a message should come again (a task waiting for a target) gets it
back after its own delay, not the policy's backoff."""

from __future__ import annotations

import asyncio
import time

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig

from shared.contracts.subjects import Subjects
from shared.jetstream.consume_loop import ACK, AtLeastOnceConsumer, Outcome, Retry, backoff


async def test_a_retry_with_a_delay_comes_back_after_that_delay(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="DELAYS", subjects=["delays.>"]))
    config = ConsumerConfig(durable_name="delays", ack_policy=AckPolicy.EXPLICIT, ack_wait=30, max_deliver=-1)
    consumer = AtLeastOnceConsumer(js, subjects, stream="DELAYS", config=config, stage="test", fetch_timeout=0.2)
    await consumer.start()
    seen: list[float] = []
    done = asyncio.Event()

    async def handle(msg: Msg) -> Outcome:
        seen.append(time.monotonic())
        if len(seen) == 1:
            return Retry("the target is not there yet", delay=0.5)
        done.set()
        return ACK

    stop = asyncio.Event()
    loop = asyncio.create_task(consumer.run_each(stop, handle, concurrency=1))
    try:
        await js.publish("delays.one", b"work")
        await asyncio.wait_for(done.wait(), timeout=10)
    finally:
        stop.set()
        await loop
        await consumer.stop()
    gap = seen[1] - seen[0]
    assert 0.5 <= gap < backoff(1), gap  # its own delay, well before the policy's 2 s
