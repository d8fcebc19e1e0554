"""A consumer whose fetches fail for a while (its stream gone, as while a cluster elects a new
leader) says so once when it begins and once when fetching works again, and then takes its work:
it used to log a warning every half second. Batches retried for one reason are said together,
not one line per message. Real nats-server."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig
from nats.js.errors import ServiceUnavailableError

from shared.contracts.subjects import Subjects
from shared.jetstream.consume_loop import ACK, AtLeastOnceConsumer, Outcome, Retry
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

    async with _running(consumer, lambda stop: consumer.run_each(stop, handle, concurrency=1)):
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
    assert said() == [("WARNING", "fetch failed"), ("INFO", "fetch works again")]
    recovered = next(r for r in caplog.records if r.getMessage() == "fetch works again")
    assert recovered.__dict__["fields"]["failures"] >= 4


async def test_batches_retried_for_one_reason_are_said_together(
        nc: NATS, subjects: Subjects, caplog: pytest.LogCaptureFixture) -> None:
    """Ten messages in batches of two, each batch's publishes failed once: said in two lines (the
    first at once, the rest when the consumer stops), not one per message or per batch."""
    caplog.set_level(logging.INFO, logger="aurora.consumer")
    js = nc.jetstream()
    consumer = await _started(js, subjects, "batch")
    for n in range(10):
        await js.publish(f"batch.{n % 2}", str(n).encode())
    deliveries: dict[bytes, list[int]] = {}

    async def handle(msgs: list[Msg]) -> Callable[[], Awaitable[Sequence[Outcome]]]:
        for msg in msgs:
            deliveries.setdefault(msg.data, []).append(msg.metadata.num_delivered)

        async def outcomes() -> Sequence[Outcome]:  # the first delivery's publishes "failed", then all is well
            return [Retry("publish: the stream leader is away", delay=0.2) if msg.metadata.num_delivered == 1
                    else ACK for msg in msgs]

        return outcomes

    async def all_again() -> bool:
        return len(deliveries) == 10 and all(seen == [1, 2] for seen in deliveries.values())

    async with _running(consumer, lambda stop: consumer.run_batches(stop, handle, batch=2, in_flight=1)):
        await poll(all_again, timeout=15, what="each message delivered again after its retry")
    lines = [r for r in caplog.records if "retried" in r.getMessage()]
    fields = [r.__dict__["fields"] for r in lines]
    assert [r.getMessage() for r in lines] == ["messages will be retried"] * 2, fields
    assert sum(f["count"] for f in fields) == 10 and fields[0]["count"] <= 2  # the first batch, then the rest
    assert {f["error"] for f in fields} == {"publish: the stream leader is away"}
    assert fields[1]["subjects"] == ["batch.0", "batch.1"]


async def test_a_retry_the_handler_said_already_gets_no_second_line(
        nc: NATS, subjects: Subjects, caplog: pytest.LogCaptureFixture) -> None:
    """A handler that logged why (a traceback) and one that failed by raising are said once; a
    plain retry still gets the loop's own line."""
    caplog.set_level(logging.INFO, logger="aurora.consumer")
    js = nc.jetstream()
    consumer = await _started(js, subjects, "each")
    deliveries: dict[str, int] = {}

    async def handle(msg: Msg) -> Outcome:
        deliveries[msg.subject] = msg.metadata.num_delivered
        if msg.metadata.num_delivered > 1:
            return ACK
        if msg.subject == "each.said":
            return Retry("the handler logged this one", delay=0.1, said=True)
        if msg.subject == "each.raised":
            raise RuntimeError("the handler broke")
        return Retry("a plain retry", delay=0.1)

    for subject in ("each.said", "each.raised", "each.plain"):
        await js.publish(subject, b"x")

    async def each_again() -> bool:
        return len(deliveries) == 3 and all(n == 2 for n in deliveries.values())

    async with _running(consumer, lambda stop: consumer.run_each(stop, handle, concurrency=1)):
        await poll(each_again, timeout=15, what="each message delivered again")
    said = [(r.getMessage(), r.__dict__["fields"].get("subject") or r.__dict__["fields"].get("subjects"))
            for r in caplog.records]
    assert said == [("handling failed; the message will come again", "each.raised"),
                    ("messages will be retried", ["each.plain"])], said


async def test_runs_retried_while_nats_is_away_are_said_together_without_tracebacks(
        nc: NATS, subjects: Subjects, caplog: pytest.LogCaptureFixture) -> None:
    """Slow work (`run_each`) is retried as batches are: while a stream leader was away each run in
    flight logged a traceback. A handler meeting NATS away (JetStream's 503) raises no traceback,
    and the messages retried for it are said by reason: the first at once, the rest together."""
    caplog.set_level(logging.INFO, logger="aurora.consumer")
    js = nc.jetstream()
    consumer = await _started(js, subjects, "runs")
    deliveries: dict[bytes, int] = {}

    async def handle(msg: Msg) -> Outcome:
        deliveries[msg.data] = msg.metadata.num_delivered
        if msg.metadata.num_delivered == 1:
            raise ServiceUnavailableError(code=503, description="no stream leader yet")
        return ACK

    for n in range(6):
        await js.publish(f"runs.{n}", str(n).encode())

    async def all_again() -> bool:
        return len(deliveries) == 6 and all(n == 2 for n in deliveries.values())

    async with _running(consumer, lambda stop: consumer.run_each(stop, handle, concurrency=3)):
        await poll(all_again, timeout=15, what="each run delivered again after NATS came back")
    lines = [r for r in caplog.records if r.levelno >= logging.WARNING]
    fields = [r.__dict__["fields"] for r in lines]
    assert [r.getMessage() for r in lines] == ["messages will be retried"] * 2, fields
    assert not any(r.exc_info for r in lines)
    assert sum(f["count"] for f in fields) == 6 and fields[0]["count"] < 6, fields
    assert all("no stream leader yet" in f["error"] for f in fields), fields


async def _started(js: JetStreamContext, subjects: Subjects, name: str) -> AtLeastOnceConsumer:
    """A consumer `name` on a new stream `NAME` of `name.>`, started."""
    await js.add_stream(StreamConfig(name=name.upper(), subjects=[f"{name}.>"]))
    config = ConsumerConfig(durable_name=name, ack_policy=AckPolicy.EXPLICIT, ack_wait=30, max_deliver=5)
    consumer = AtLeastOnceConsumer(js, subjects, stream=name.upper(), config=config, stage="test", fetch_timeout=0.2)
    await consumer.start()
    return consumer


@asynccontextmanager
async def _running(consumer: AtLeastOnceConsumer,
                   loop: Callable[[asyncio.Event], Awaitable[None]]) -> AsyncIterator[None]:
    """The consumer's `loop(stop)` in the background; on leaving, stopped, and the consumer too."""
    stop = asyncio.Event()
    running = asyncio.create_task(loop(stop))
    try:
        yield
    finally:
        stop.set()
        await running
        await consumer.stop()
