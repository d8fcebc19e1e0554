"""JetStream publishes acknowledged together (shared/nats/acked_publish.py) and the gateway's outbox
that sends through them: stored in order, errors as `js.publish` raises them, nothing lost
while the stream is missing, and an item's `done` called once it is stored, never before.
Real nats-server."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable

import pytest
from nats.aio.client import Client as NATS
from nats.js.errors import APIError, NoStreamResponseError

from services.mcp_gateway.reporting.outbox import STILL_BEING_STORED, Outbox
from shared.jetstream.api_requests import creating
from shared.lifecycle import NotStarted
from shared.nats.acked_publish import AckedPublisher
from tests.harness.waiting import poll


def counted_sender(acks: AckedPublisher, prefix: str,
                   attempts: list[int]) -> Callable[[int], Awaitable[asyncio.Future[int]]]:
    """An outbox's `send`: item n published on `<prefix>.<n>` with a message id of its own, each
    try noted in `attempts`."""
    async def send(n: int) -> asyncio.Future[int]:
        attempts.append(n)
        return await acks.send(f"{prefix}.{n}", str(n).encode(), headers={"Nats-Msg-Id": f"{prefix}-{n}"})

    return send


async def test_a_batch_is_stored_in_order_and_each_future_is_its_sequence(nc: NATS) -> None:
    js = nc.jetstream()
    await js.add_stream(name="ACKS", subjects=["acks.>"])
    acks = AckedPublisher(nc)
    await acks.start()
    futures = [await acks.send(f"acks.{n}", str(n).encode(), headers={"Nats-Msg-Id": f"m{n}"}) for n in range(20)]
    assert await asyncio.gather(*futures) == list(range(1, 21))
    assert [(await js.get_msg("ACKS", seq)).data for seq in (1, 20)] == [b"0", b"19"]
    # The same message id again is a duplicate: acknowledged with the stored sequence, not stored twice.
    assert await acks.publish("acks.3", b"again", headers={"Nats-Msg-Id": "m3"}) == 4
    assert (await js.stream_info("ACKS")).state.messages == 20
    assert acks.in_flight == 0
    await acks.stop()


async def test_no_stream_and_a_refused_publish_fail_as_js_publish_does(nc: NATS) -> None:
    js = nc.jetstream()
    await js.add_stream(name="ACKS", subjects=["acks.>"])
    acks = AckedPublisher(nc)
    await acks.start()
    with pytest.raises(NoStreamResponseError):
        await acks.publish("nobody.stores.this", b"x")
    with pytest.raises(APIError) as refused:  # the stream named in the header is not the one that would store it
        await acks.publish("acks.1", b"x", headers={"Nats-Expected-Stream": "OTHER"})
    assert refused.value.err_code == 10060, refused.value
    assert acks.in_flight == 0
    await acks.stop()


async def test_the_outbox_keeps_what_it_could_not_store_until_the_stream_exists(nc: NATS) -> None:
    js = nc.jetstream()
    acks = AckedPublisher(nc)
    await acks.start()
    attempts: list[int] = []

    send = counted_sender(acks, "later", attempts)

    async def retried() -> bool:
        return len(attempts) > 5  # the five went out once, failed, and the first is being tried again

    outbox: Outbox[int] = Outbox("test", send, ack_timeout=2.0, stop_timeout=20)
    await outbox.start()
    stored_said: list[int] = []
    for n in range(5):
        outbox.put(n, functools.partial(stored_said.append, n))
    await poll(retried, timeout=10, what="a failed publish retried")
    assert stored_said == []  # tried, not stored: not said to be
    await js.add_stream(name="LATER", subjects=["later.>"])
    for n in range(5, 10):
        outbox.put(n, functools.partial(stored_said.append, n))
    await outbox.stop()
    assert outbox.dropped == 0
    assert sorted(stored_said) == list(range(10))
    stored = [int((await js.get_msg("LATER", seq)).data) for seq in range(1, 11)]
    assert sorted(stored) == list(range(10))
    assert (await js.stream_info("LATER")).state.messages == 10
    await acks.stop()


async def test_an_outage_is_said_when_it_begins_and_when_it_ends_not_at_every_retry(
        nc: NATS, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="aurora.mcp_gateway.outbox")
    js = nc.jetstream()
    acks = AckedPublisher(nc)
    await acks.start()
    attempts: list[int] = []

    send = counted_sender(acks, "gone", attempts)

    async def retried_often() -> bool:
        return attempts.count(0) >= 4  # the first item tried again after pauses of 0.2, 0.4 and 0.8 s

    outbox: Outbox[int] = Outbox("test", send, ack_timeout=1.0, stop_timeout=20)
    await outbox.start()
    for n in range(3):
        outbox.put(n)
    await poll(retried_often, timeout=15, what="the first item retried three times")
    await js.add_stream(name="GONE", subjects=["gone.>"])
    await outbox.stop()
    assert outbox.dropped == 0 and (await js.stream_info("GONE")).state.messages == 3
    said = [(r.levelno, r.getMessage(), r.__dict__.get("fields", {}))
            for r in caplog.records if r.name == "aurora.mcp_gateway.outbox"]
    assert [(level, message) for level, message, _ in said] == [
        (logging.WARNING, "outbox publish failed"), (logging.INFO, "outbox publish works again")], said
    assert said[0][2]["outbox"] == "test" and "no response from stream" in said[0][2]["error"], said
    assert said[1][2]["failures"] >= 3, said  # the count of failed tries is kept for the last line
    await acks.stop()


async def test_once_the_first_item_of_a_failed_batch_gets_through_the_rest_follow_at_once(nc: NATS) -> None:
    js = nc.jetstream()
    acks = AckedPublisher(nc)
    await acks.start()
    attempts: list[int] = []
    stored_at: dict[int, float] = {}
    loop = asyncio.get_running_loop()

    send = counted_sender(acks, "burst", attempts)

    async def retried() -> bool:
        return len(attempts) > 30  # the batch went out once, failed, and its first item is tried again

    async def all_stored() -> bool:
        return len(stored_at) == 30

    outbox: Outbox[int] = Outbox("test", send, ack_timeout=2.0, stop_timeout=5)  # no send_now: one batch, in the task
    await outbox.start()
    def stored(n: int) -> None:
        stored_at[n] = loop.time()

    for n in range(30):
        outbox.put(n, functools.partial(stored, n))
    await poll(retried, timeout=10, what="the failed batch's first item retried")
    await js.add_stream(name="BURST", subjects=["burst.>"])
    await poll(all_stored, timeout=30, what="the batch stored once the stream exists")
    # A pause of 0.2 s before each item's first retry made the other 29 take 5.8 s or more.
    spread = max(stored_at.values()) - min(stored_at.values())
    assert spread < 2.0, f"the batch took {spread:.1f} s to get through after its first item"
    assert sorted([int((await js.get_msg("BURST", seq)).data or b"") for seq in range(1, 31)]) == list(range(30))
    await outbox.stop()
    await acks.stop()


async def test_an_item_put_while_the_outbox_is_idle_is_published_in_put_and_settled_by_its_ack(nc: NATS) -> None:
    js = nc.jetstream()
    await js.add_stream(name="NOW", subjects=["now.>"])
    acks = AckedPublisher(nc)
    with pytest.raises(NotStarted):  # not listening for acks yet: nothing may be sent
        acks.send_now("now.early", b"x")
    with pytest.raises(NotStarted):
        await acks.send("now.early", b"x")
    await acks.start()
    await acks.publish("now.first", b"first")
    through_the_task: list[int] = []
    send, send_now = _senders(acks, "now", through_the_task)
    outbox: Outbox[int] = Outbox("test", send, send_now=send_now, window=40, stop_timeout=10)
    await outbox.start()
    stored_said: list[int] = []
    for n in range(50):
        outbox.put(n, functools.partial(stored_said.append, n))
    assert acks.in_flight == 40  # published right in `put`, up to the window; the rest queued for the task
    await outbox.stop()
    assert outbox.dropped == 0 and acks.in_flight == 0
    assert sorted(stored_said) == list(range(50))
    assert through_the_task == list(range(40, 50))
    stored = [(await js.get_msg("NOW", seq)).data for seq in range(1, 52)]
    assert stored == [b"first", *(str(n).encode() for n in range(50))]
    await acks.stop()


async def test_an_ack_that_never_comes_expires_and_its_item_is_retried_until_stored(nc: NATS) -> None:
    js = nc.jetstream()
    listener = await nc.subscribe("lost.>")  # someone hears the publish, nobody stores or acks it
    await js.add_stream(name="WARM", subjects=["warm.>"])
    acks = AckedPublisher(nc)
    await acks.start()
    await acks.publish("warm.1", b"w")  # listening for acks from now on
    attempts: list[int] = []
    send, send_now = _senders(acks, "lost", attempts)
    outbox: Outbox[int] = Outbox("test", send, send_now=send_now, ack_timeout=0.5, stop_timeout=20)
    await outbox.start()
    stored_said: list[int] = []
    outbox.put(1, functools.partial(stored_said.append, 1))
    assert acks.in_flight == 1 and attempts == []  # published in `put`, waiting for its ack

    async def retried() -> bool:
        return bool(attempts)

    await poll(retried, timeout=10, what="the item whose ack never came handed to the task")
    assert stored_said == []
    await js.add_stream(name="LOST", subjects=["lost.>"])
    await outbox.stop()
    assert outbox.dropped == 0 and stored_said == [1]
    assert (await js.stream_info("LOST")).state.messages == 1
    assert (await js.get_msg("LOST", 1)).data == b"1"
    await listener.unsubscribe()
    await acks.stop()


async def test_a_copy_still_being_stored_by_the_cluster_is_asked_again_without_a_warning(
        cluster_nc: NATS, caplog: pytest.LogCaptureFixture) -> None:
    """A replicated stream answers a copy whose message id it is still storing (an earlier
    attempt whose ack was lost in a fault) with err_code 10158. The outbox asks again until the
    duplicate ack comes, and says so at info level: during an outage every item may meet it."""
    caplog.set_level(logging.INFO, logger="aurora.mcp_gateway.outbox")
    js = cluster_nc.jetstream(timeout=10)
    # Asked again while the cluster is still forming (too few JetStream peers to place three replicas).
    await creating(lambda: js.add_stream(name="TWICE", subjects=["twice.>"], num_replicas=3), "stream TWICE", 3)
    acks = AckedPublisher(cluster_nc)
    await acks.start()
    await acks.publish("twice.warm", b"w")  # listening for acks from now on
    through_the_task: list[int] = []
    send, send_now = _senders(acks, "twice", through_the_task)
    outbox: Outbox[int] = Outbox("test", send, send_now=send_now, stop_timeout=20)
    await outbox.start()
    stored_said: list[int] = []
    for n in range(5):  # each item twice in one write: the second copy reaches the leader mid-proposal
        outbox.put(n, functools.partial(stored_said.append, n))
        outbox.put(n, functools.partial(stored_said.append, n))
    await outbox.stop()
    assert outbox.dropped == 0 and sorted(stored_said) == sorted([*range(5), *range(5)])
    assert (await js.stream_info("TWICE")).state.messages == 6  # the warm-up and each item once
    said = [(r.levelno, r.getMessage(), r.__dict__.get("fields", {}).get("error", ""))
            for r in caplog.records if r.name == "aurora.mcp_gateway.outbox"]  # not the cluster forming
    still_storing = [s for s in said if f"err_code={STILL_BEING_STORED}" in s[2]]
    assert still_storing, f"no copy met the cluster still storing it: {said}"
    assert through_the_task, "the copies met with 10158 were not asked again"
    assert all(level == logging.INFO and "still being stored" in message for level, message, _ in still_storing), said
    assert [s for s in said if s[0] >= logging.WARNING] == []
    await acks.stop()


def _senders(acks: AckedPublisher, prefix: str, through_the_task: list[int]) -> tuple[
        Callable[[int], Awaitable[asyncio.Future[int]]], Callable[[int], asyncio.Future[int] | None]]:
    """An outbox's `send` (noting each item it takes in `through_the_task`) and `send_now`, both
    publishing item n on `<prefix>.<n>`."""
    def message(n: int) -> tuple[str, bytes, dict[str, str]]:
        return f"{prefix}.{n}", str(n).encode(), {"Nats-Msg-Id": f"{prefix}-{n}"}

    async def send(n: int) -> asyncio.Future[int]:
        through_the_task.append(n)
        return await acks.send(*message(n))

    def send_now(n: int) -> asyncio.Future[int] | None:
        return acks.send_now(*message(n))

    return send, send_now
