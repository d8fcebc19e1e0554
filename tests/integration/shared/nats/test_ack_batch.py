"""A batch of publishes settled together (shared/nats/ack_batch.py), over a real nats-server: each
key with its failure (None: stored), one deadline for the whole batch, an ack never answered
given up on, a missing stream named."""

from __future__ import annotations

import time

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from shared.nats.ack_batch import AckBatch
from shared.nats.acked_publish import AckedPublisher


async def test_each_key_is_settled_with_its_failure_in_the_order_added(nc: NATS) -> None:
    js = nc.jetstream()
    await js.add_stream(name="BATCH", subjects=["batch.>"])
    # A subscriber that never answers: a publish there is one whose acknowledgement never comes.
    async def never_answer(msg: Msg) -> None:
        return None

    await nc.subscribe("silent.>", cb=never_answer)
    acks = AckedPublisher(nc)
    await acks.start()
    batch: AckBatch[str] = AckBatch(timeout=0.5)
    batch.add("first", await acks.send("batch.1", b"1"))
    lost = await acks.send("silent.1", b"x")
    batch.add("lost", lost)
    batch.add("no stream", await acks.send("nowhere.1", b"y"))
    batch.add("second", await acks.send("batch.2", b"2"))
    assert len(batch) == 4

    began = time.monotonic()
    settled = await batch.settle()
    waited = time.monotonic() - began

    assert [key for key, _ in settled] == ["first", "lost", "no stream", "second"]
    failures = dict(settled)
    assert failures["first"] is None and failures["second"] is None
    assert failures["lost"] == "no acknowledgement within 0.5s"
    assert failures["no stream"] is not None and failures["no stream"].startswith("NoStreamResponseError")
    assert 0.4 < waited < 2.0  # one deadline for the batch, not one per message
    assert lost.cancelled()  # given up on: the publisher no longer waits for its ack
    assert len(batch) == 0 and await batch.settle() == []
    assert [(await js.get_msg("BATCH", seq)).data for seq in (1, 2)] == [b"1", b"2"]
    await acks.stop()


async def test_a_batch_of_stored_publishes_does_not_wait_for_the_deadline(nc: NATS) -> None:
    await nc.jetstream().add_stream(name="QUICK", subjects=["quick.>"])
    acks = AckedPublisher(nc)
    await acks.start()
    batch: AckBatch[int] = AckBatch(timeout=30.0)
    for n in range(50):
        batch.add(n, await acks.send(f"quick.{n}", b"."))
    began = time.monotonic()
    assert await batch.settle() == [(n, None) for n in range(50)]
    assert time.monotonic() - began < 5.0
    await acks.stop()
