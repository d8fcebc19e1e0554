"""A stage that fetches in batches hands a message over as soon as it comes, not when its pull
request expires (shared/jetstream/pulls.py), and still takes what is waiting as one batch."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import nats.js.errors
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import ConnectionClosedError
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, StreamConfig

from shared.contracts.subjects import Subjects
from shared.jetstream.consume_loop import ACK, AtLeastOnceConsumer, Outcome
from shared.jetstream.pulls import Puller
from shared.nats.bus import open_nats
from tests.harness.waiting import poll

FETCH_TIMEOUT = 20.0  # a pull request waits this long: a message held back until then is plain to see


async def _started_consumer(js: JetStreamContext, subjects: Subjects, stream: str,
                            fetch_timeout: float = 1.0) -> AtLeastOnceConsumer:
    """A started consumer (durable `stream.lower()`, a minute's ack wait) on a new stream of the
    subjects `<stream.lower()>.>`."""
    durable = stream.lower()
    await js.add_stream(StreamConfig(name=stream, subjects=[f"{durable}.>"]))
    config = ConsumerConfig(durable_name=durable, ack_policy=AckPolicy.EXPLICIT, ack_wait=60, max_deliver=-1)
    consumer = AtLeastOnceConsumer(js, subjects, stream=stream, config=config, stage="test",
                                   fetch_timeout=fetch_timeout)
    await consumer.start()
    return consumer


async def _until_waiting(js: JetStreamContext, stream: str, durable: str, requests: int = 1) -> None:
    """Until the consumer holds `requests` pull requests waiting on the server."""
    async def waiting() -> bool:
        return ((await js.consumer_info(stream, durable)).num_waiting or 0) >= requests

    await poll(waiting, timeout=10, what=f"{durable} to ask for messages")


async def _delivered_by_no_fetch(nc: NATS, subjects: Subjects, stream: str) -> AtLeastOnceConsumer:
    """A started consumer on a new `stream` (durable `stream.lower()`, a minute's ack wait) holding
    one message the server delivered on a pull request of its inbox that no fetch of its own made,
    and that the stage has read: it waits there, handed over by no fetch."""
    js = nc.jetstream()
    durable = stream.lower()
    consumer = await _started_consumer(js, subjects, stream)
    sub = consumer.require_started()
    await nc.publish(f"$JS.API.CONSUMER.MSG.NEXT.{stream}.{durable}",
                     json.dumps({"batch": 4, "expires": int(5e9)}).encode(), reply=sub._deliver)
    await js.publish(f"{durable}.one", b"delivered")
    async def delivered() -> bool:
        return ((await js.consumer_info(stream, durable)).num_ack_pending or 0) >= 1

    await poll(delivered, timeout=10, what=f"the message to be delivered to {durable}")
    # Sent by the server is not yet read by the stage: the flush's answer comes behind the message.
    await nc.flush()
    return consumer


async def test_a_message_delivered_on_a_pull_left_waiting_is_handed_over_at_once(nc: NATS, subjects: Subjects) -> None:
    """An earlier fetch can leave its pull request waiting on the server (nats-py took a late
    status of the one before for its answer). Such a request, older than the loop's own, is the
    one a new message is delivered on; nats-py's batch fetch then waited for the rest of that
    request's batch, until it expired, before handing the message over."""
    js = nc.jetstream()
    consumer = await _started_consumer(js, subjects, "PULLS", fetch_timeout=FETCH_TIMEOUT)
    sub = consumer.require_started()
    left_waiting = json.dumps({"batch": 256, "expires": int(FETCH_TIMEOUT * 1e9)}).encode()
    await nc.publish("$JS.API.CONSUMER.MSG.NEXT.PULLS.pulls", left_waiting, reply=sub._deliver)
    handed: list[list[bytes]] = []
    came = asyncio.Event()

    async def begin(msgs: list[Msg]):  # type: ignore[no-untyped-def]
        handed.append([msg.data for msg in msgs])
        came.set()

        async def finish() -> list[Outcome]:
            return [ACK] * len(msgs)

        return finish

    stop = asyncio.Event()
    loop = asyncio.create_task(consumer.run_batches(stop, begin, batch=256, in_flight=1))
    try:
        deadline = time.monotonic() + 10
        while ((await js.consumer_info("PULLS", "pulls")).num_waiting or 0) < 2:  # the loop's own pull too
            assert time.monotonic() < deadline, "the consumer never asked for messages"
            await asyncio.sleep(0.05)
        sent = time.monotonic()
        await js.publish("pulls.one", b"first")
        await asyncio.wait_for(came.wait(), timeout=FETCH_TIMEOUT + 5)
        waited = time.monotonic() - sent
    finally:
        stop.set()
        await consumer.stop()
        loop.cancel()
    assert handed == [[b"first"]]
    assert waited < FETCH_TIMEOUT / 2, f"held back {waited:.1f} s, until the waiting pull request expired"


async def test_what_is_waiting_is_taken_as_one_batch_up_to_its_size(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="PILED", subjects=["piled.>"]))
    await js.add_consumer("PILED", ConsumerConfig(durable_name="piled", ack_policy=AckPolicy.EXPLICIT))
    for n in range(12):
        await js.publish("piled.n", str(n).encode())
    sub = await js.pull_subscribe_bind("piled", stream="PILED")
    puller = Puller(sub)
    first = await puller.fetch(10, 5.0)
    rest = await puller.fetch(10, 5.0)
    assert [m.data for m in first] == [str(n).encode() for n in range(10)]
    assert [m.data for m in rest] == [b"10", b"11"]
    for msg in first + rest:
        await msg.ack()
    await sub.unsubscribe()


async def test_a_trickle_of_messages_is_carried_by_one_pull_request(nc: NATS, subjects: Subjects) -> None:
    """Each message is handed over as it comes, and the request stays open for the next: one
    request, not one per message (the server's work and the stages' messages per event)."""
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="TRICKLE", subjects=["trickle.>"]))
    await js.add_consumer("TRICKLE", ConsumerConfig(durable_name="trickle", ack_policy=AckPolicy.EXPLICIT))
    requests: list[bytes] = []

    async def asked(msg: Msg) -> None:
        requests.append(msg.data)

    watch = await nc.subscribe("$JS.API.CONSUMER.MSG.NEXT.TRICKLE.trickle", cb=asked)
    sub = await js.pull_subscribe_bind("trickle", stream="TRICKLE")
    puller = Puller(sub)
    handed: list[list[bytes]] = []
    for n in range(5):
        await js.publish("trickle.n", str(n).encode())
        msgs = await asyncio.wait_for(puller.fetch(256, FETCH_TIMEOUT), FETCH_TIMEOUT / 2)
        handed.append([msg.data for msg in msgs])
        for msg in msgs:
            await msg.ack()
    await nc.flush()
    await watch.unsubscribe()
    await sub.unsubscribe()
    assert handed == [[str(n).encode()] for n in range(5)]
    assert len(requests) == 1, requests


async def test_a_request_the_server_ends_is_asked_again_once_per_fetch(nc: NATS, subjects: Subjects) -> None:
    """A leader changing ends the waiting pull request with a 409 (here sent as nats-server sends
    it): asked again at once, the fetch goes on. Ended so twice in one fetch (no leader yet), the
    fetch waits out its time instead of asking again and again. The consumer deleted, a request
    finds nobody (a 503): an error, which the consumer loop says as a failing fetch."""
    js = nc.jetstream()
    await js.add_stream(StreamConfig(name="ENDED", subjects=["ended.>"]))
    await js.add_consumer("ENDED", ConsumerConfig(durable_name="ended", ack_policy=AckPolicy.EXPLICIT))
    # The pull requests are counted as they leave: a subscription to their subject would answer
    # them itself, and nats-server would not say that nobody does.
    made: list[str] = []
    publish = nc.publish

    async def counted(subject: str, *args: Any, **kwargs: Any) -> None:
        if subject == "$JS.API.CONSUMER.MSG.NEXT.ENDED.ended":
            made.append(subject)
        await publish(subject, *args, **kwargs)

    nc.publish = counted  # type: ignore[method-assign]

    def asked() -> int:
        count = len(made)
        made.clear()
        return count

    sub = await js.pull_subscribe_bind("ended", stream="ENDED")
    puller = Puller(sub)
    fetched = asyncio.create_task(puller.fetch(10, FETCH_TIMEOUT))
    deadline = time.monotonic() + 10
    while ((await js.consumer_info("ENDED", "ended")).num_waiting or 0) == 0:
        assert time.monotonic() < deadline, "the fetch never asked"
        await asyncio.sleep(0.05)
    await nc.publish(sub._deliver, b"", headers={"Status": "409", "Description": "Leadership Change"})
    await js.publish("ended.one", b"after the change")
    assert [msg.data for msg in await asyncio.wait_for(fetched, FETCH_TIMEOUT / 2)] == [b"after the change"]
    assert asked() == 2  # the first, ended, and the one asked at once

    fetched = asyncio.create_task(puller.fetch(10, 1.0))
    await asyncio.sleep(0)  # it waits on the request still open
    for _ in range(2):
        await nc.publish(sub._deliver, b"", headers={"Status": "409", "Description": "Leadership Change"})
    with pytest.raises(NatsTimeoutError):
        await asyncio.wait_for(fetched, FETCH_TIMEOUT / 2)
    assert asked() == 1  # after the first 409 (the request before was still open): none after the second

    await js.delete_consumer("ENDED", "ended")
    error: Exception | None = None
    for _ in range(3):  # a request still waiting may be ended too (409) and the fetch waited out first
        try:
            await asyncio.wait_for(puller.fetch(10, 1.0), FETCH_TIMEOUT / 2)
        except NatsTimeoutError:
            continue
        except nats.js.errors.APIError as exc:
            error = exc
            break
    after_delete = asked()
    nc.publish = publish  # type: ignore[method-assign]
    await sub.unsubscribe()
    assert isinstance(error, nats.js.errors.ServiceUnavailableError), error
    assert after_delete <= 4, after_delete


async def test_a_fetch_waiting_when_its_connection_closes_ends_at_once(nats_url: str) -> None:
    """The wait of a fetch is one nats-py cancels when its client closes, as its own `next_msg`
    was: the fetch ends with nats-py's ConnectionClosedError then, not after its timeout (a KV
    watch ends on it)."""
    own = await open_nats(servers=nats_url)
    js = own.jetstream()
    await js.add_stream(StreamConfig(name="CLOSING", subjects=["closing.>"]))
    await js.add_consumer("CLOSING", ConsumerConfig(durable_name="closing", ack_policy=AckPolicy.EXPLICIT))
    puller = Puller(await js.pull_subscribe_bind("closing", stream="CLOSING"))
    fetch = asyncio.create_task(puller.fetch(8, FETCH_TIMEOUT))
    deadline = time.monotonic() + 10
    while ((await js.consumer_info("CLOSING", "closing")).num_waiting or 0) < 1:  # the fetch waits on the server
        assert time.monotonic() < deadline, "the fetch never asked for messages"
        await asyncio.sleep(0.05)
    await own.close()
    done, _ = await asyncio.wait({fetch}, timeout=FETCH_TIMEOUT / 2)
    fetch.cancel()
    assert done, "the fetch waited on after its connection closed"
    assert isinstance(fetch.exception(), ConnectionClosedError)


async def test_what_was_delivered_and_not_handed_over_is_handled_when_a_stage_stops(nc: NATS,
                                                                                   subjects: Subjects) -> None:
    """A pull request answered as a stage stops leaves its message in the stage's hands, handed
    over by no fetch; `handle_delivered` handles it then (the scheduler's ticks), rather than
    leaving it to come again after the ack wait."""
    js = nc.jetstream()
    consumer = await _delivered_by_no_fetch(nc, subjects, "LEFT")
    handled: list[bytes] = []

    async def handle(msg: Msg) -> Outcome:
        handled.append(msg.data)
        return ACK

    try:
        count = await consumer.handle_delivered(handle, timeout=5.0)
    finally:
        await consumer.stop()
    assert (count, handled) == (1, [b"delivered"])
    deadline = time.monotonic() + 10
    while (await js.consumer_info("LEFT", "left")).num_ack_pending:  # and acknowledged
        assert time.monotonic() < deadline, "the handled message was never acknowledged"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("shape", ["run_each", "run_batches"])
async def test_a_stage_that_stops_does_not_wait_out_its_open_pull_request(nc: NATS, subjects: Subjects,
                                                                          shape: str) -> None:
    """A stop ends the fetch waiting at once: a service stopped in a second or more, each of its
    loops waiting out the pull request it had open (the fetch timeout)."""
    js = nc.jetstream()
    consumer = await _started_consumer(js, subjects, "STOPS", fetch_timeout=FETCH_TIMEOUT)

    async def handle(msg: Msg) -> Outcome:
        return ACK

    async def begin(msgs: list[Msg]):  # type: ignore[no-untyped-def]
        async def finish() -> list[Outcome]:
            return [ACK] * len(msgs)

        return finish

    stop = asyncio.Event()
    loop = asyncio.create_task(consumer.run_each(stop, handle, concurrency=2) if shape == "run_each"
                               else consumer.run_batches(stop, begin, batch=16, in_flight=1))
    try:
        await _until_waiting(js, "STOPS", "stops")  # its fetch waits on the server
        stop.set()
        done, _ = await asyncio.wait({loop}, timeout=FETCH_TIMEOUT / 2)
    finally:
        loop.cancel()
        await consumer.stop()
    assert done, "the loop waited out its pull request after the stop"
    assert loop.exception() is None


async def test_what_was_delivered_and_never_started_is_handed_back_when_the_consumer_stops(
        nc: NATS, subjects: Subjects) -> None:
    """A message the server delivered as a stage stopped, and no fetch handed over, is handed back
    (nak) once the stage's consumer stops: another instance has it at once, not after the ack
    wait (a minute here)."""
    stopping = await _delivered_by_no_fetch(nc, subjects, "BACK")
    await stopping.stop()
    js = nc.jetstream()
    other = Puller(await js.pull_subscribe_bind("back", stream="BACK"))
    msgs = await other.fetch(1, 20.0)  # well within the ack wait
    assert [(m.data, m.metadata.num_delivered) for m in msgs] == [(b"delivered", 2)]


@pytest.mark.timeout(60)  # a loop whose fetches end at once never yields: only the timeout ends it
async def test_a_loop_run_again_after_a_stop_fetches_again(nc: NATS, subjects: Subjects) -> None:
    """The stop interrupts the consumer's fetches for that loop only: a loop started again on the
    same consumer takes what comes (it would spin on fetches ending at once otherwise)."""
    js = nc.jetstream()
    consumer = await _started_consumer(js, subjects, "AGAIN", fetch_timeout=FETCH_TIMEOUT)
    handled: list[bytes] = []
    came = asyncio.Event()

    async def handle(msg: Msg) -> Outcome:
        handled.append(msg.data)
        came.set()
        return ACK

    try:
        first = asyncio.Event()
        loop = asyncio.create_task(consumer.run_each(first, handle, concurrency=1))
        await _until_waiting(js, "AGAIN", "again")  # its fetch waits on the server
        first.set()
        await asyncio.wait_for(loop, timeout=FETCH_TIMEOUT / 2)  # interrupted
        again = asyncio.Event()
        loop = asyncio.create_task(consumer.run_each(again, handle, concurrency=1))
        await js.publish("again.one", b"after the restart")
        await asyncio.wait_for(came.wait(), timeout=FETCH_TIMEOUT / 2)
        again.set()
        await asyncio.wait_for(loop, timeout=FETCH_TIMEOUT / 2)
    finally:
        await consumer.stop()
    assert handled == [b"after the restart"]
