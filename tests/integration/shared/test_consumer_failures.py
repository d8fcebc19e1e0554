"""A consumer whose fetches fail for a while (its stream gone, as while a cluster elects a new
leader) says so once when it begins and once when fetching works again, and then takes its work:
it used to log a warning every half second. Real nats-server."""

from __future__ import annotations

import asyncio
import logging

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig

from shared.consumer import ACK, AtLeastOnceConsumer, Outcome
from shared.subjects import Subjects
from tests.harness.waiting import poll


async def test_failing_fetches_are_said_as_one_streak_and_work_is_taken_after_it(
        nc: NATS, subjects: Subjects, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="aurora.consumer")
    js = nc.jetstream()
    stream = StreamConfig(name="AWAY", subjects=["away.>"])
    config = ConsumerConfig(durable_name="away", ack_policy=AckPolicy.EXPLICIT, ack_wait=30)
    await js.add_stream(stream)
    consumer = AtLeastOnceConsumer(js, subjects, stream="AWAY", config=config, stage="test", fetch_timeout=0.2)
    await consumer.start()
    handled: list[bytes] = []

    async def handle(msg: Msg) -> Outcome:
        handled.append(msg.data)
        return ACK

    def said() -> list[tuple[str, str]]:
        return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "aurora.consumer"]

    stop = asyncio.Event()
    loop = asyncio.create_task(consumer.run_each(stop, handle, concurrency=1))
    try:
        await js.delete_stream("AWAY")

        async def failing_a_while() -> bool:
            return ("WARNING", "fetch failed") in said() and consumer.stats.last_error is not None

        await poll(failing_a_while, timeout=10, what="a fetch failing")
        await asyncio.sleep(2)  # four more attempts fail meanwhile
        await js.add_stream(stream)
        await js.add_consumer("AWAY", config)
        await js.publish("away.1", b"after")

        async def taken() -> bool:
            return handled == [b"after"]

        await poll(taken, timeout=10, what="the work published after the streak")
    finally:
        stop.set()
        await loop
        await consumer.stop()
    assert said() == [("WARNING", "fetch failed"), ("INFO", "fetch works again")]
    recovered = next(r for r in caplog.records if r.getMessage() == "fetch works again")
    assert recovered.__dict__["fields"]["failures"] >= 4
