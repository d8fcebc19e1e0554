"""A KV mirror follows its bucket through a named pull consumer (shared/jetstream/kvwatch.py): a change
is applied as it arrives, and a consumer that went away is created again from the revision
after the last one seen, so no change is lost."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.kv import KeyValue

from shared.contracts.subjects import Subjects
from shared.jetstream.kvmirror import KvMirror, read_all
from shared.jetstream.kvwatch import BucketWatch
from shared.jetstream.streams import agents_bucket, ensure_bucket
from shared.lifecycle import NotStarted
from tests.harness.runs import poll


async def _consumers(nc: NATS, stream: str) -> list[str]:
    return [info.name for info in await nc.jetstream().consumers_info(stream)]


def _said(caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "aurora.kvwatch"]


async def test_the_mirror_follows_changes_at_once_and_survives_losing_its_consumer(
        nc: NATS, subjects: Subjects, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="aurora.kvwatch")
    kv = await ensure_bucket(nc.jetstream(), agents_bucket(subjects))
    await kv.put("a", b"1")
    await kv.put("b", b"1")
    await kv.delete("b")
    mirror: KvMirror[bytes] = KvMirror(kv, bytes, name="agents")
    await mirror.start()
    try:
        assert mirror.items == {"a": b"1"}  # the latest of each key, deletions applied
        [name] = await _consumers(nc, "KV_AMP_AGENTS")
        assert name.startswith("aurora_eph_"), name  # no NATS_USER here: the owner is `aurora`

        started = time.monotonic()
        await kv.put("a", b"2")
        await poll(lambda: asyncio.sleep(0, mirror.items.get("a") == b"2"), timeout=10, what="the change")
        assert time.monotonic() - started < 2.0  # not held back until a fetch's timeout

        subscriptions = len(nc._subs)
        await nc.jetstream().delete_consumer("KV_AMP_AGENTS", name)  # as a server restart would
        await kv.put("c", b"1")
        await kv.put("a", b"3")
        await poll(lambda: asyncio.sleep(0, mirror.items == {"a": b"3", "c": b"1"}), timeout=20,
                   what=f"the changes after the consumer went; mirror: {mirror.items}")
        [again] = await _consumers(nc, "KV_AMP_AGENTS")
        assert again != name and again.startswith("aurora_eph_")
        # The lost consumer's subscription was let go: left, it would hold up `nc.drain()` at stop.
        assert len(nc._subs) == subscriptions
        # Healed by reopening at once and nothing lost: no warning, the connection was never away.
        assert _said(caplog) == [(logging.INFO, "bucket watch interrupted; reopening")]
    finally:
        await mirror.stop()
    assert await read_all(kv) == {"a": b"3", "c": b"1"}


async def test_a_watch_broken_longer_than_its_grace_is_a_warning_until_it_works_again(
        nc: NATS, subjects: Subjects, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="aurora.kvwatch")
    js = nc.jetstream()
    spec = agents_bucket(subjects)
    await ensure_bucket(js, spec)
    watch = BucketWatch(js, spec.name, grace=1.0)
    await watch.start()
    assert watch.initial() == []
    seen: list[KeyValue.Entry] = []

    async def follow() -> None:
        async for entry in watch.changes():
            seen.append(entry)

    following = asyncio.create_task(follow())
    try:
        await js.delete_key_value(spec.name)  # every fetch and every reopen fails from now on

        async def warned() -> bool:
            return (logging.WARNING, "bucket watch failed") in _said(caplog)

        await poll(warned, timeout=15, what="the broken watch said as a warning")
        kv = await ensure_bucket(js, spec)
        await kv.put("a", b"back")
        await poll(lambda: asyncio.sleep(0, [e.key for e in seen] == ["a"]), timeout=15,
                   what=f"the change after the bucket came back; seen {seen}")
        said = _said(caplog)
        warnings = [message for level, message in said if level >= logging.WARNING]
        assert warnings == ["bucket watch failed"], said  # said once, after the grace; not per try
        assert said.index((logging.WARNING, "bucket watch failed")) > 0, said  # the first tries at info
        assert said[-1] == (logging.INFO, "bucket watch works again"), said
    finally:
        await watch.stop()
        following.cancel()
        await asyncio.gather(following, return_exceptions=True)


async def test_a_watch_is_started_once_stopped_once_and_a_failed_start_lets_its_consumer_go(
        nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    kv = await ensure_bucket(js, agents_bucket(subjects))
    await kv.put("a", b"1")
    subscriptions = len(nc._subs)

    watch = BucketWatch(js, kv.bucket, plan=kv.plan)
    with pytest.raises(NotStarted):
        watch.initial()
    await watch.start()
    await watch.start()  # nothing more: one consumer, one subscription
    assert [e.key for e in watch.initial()] == ["a"]
    assert len(await _consumers(nc, "KV_AMP_AGENTS")) == 1 and len(nc._subs) == subscriptions + 1
    await watch.stop()
    await watch.stop()
    assert len(nc._subs) == subscriptions
    with pytest.raises(NotStarted):
        watch.initial()

    # The consumer opens, then reading the current entries runs out of time: the start fails
    # and what it had opened is let go.
    hasty = BucketWatch(js, kv.bucket, plan=kv.plan, initial_timeout=0.0)
    with pytest.raises(NatsTimeoutError):
        await hasty.start()
    assert len(nc._subs) == subscriptions
    assert not hasty.started


async def test_changes_one_after_another_come_at_once_on_one_pull_request(nc: NATS, subjects: Subjects) -> None:
    """A change is handed over as soon as it comes, and a trickle of them is carried by the one
    pull request the watch keeps open (shared/jetstream/pulls.py), not one request per change."""
    kv = await ensure_bucket(nc.jetstream(), agents_bucket(subjects))
    requests: list[bytes] = []

    async def asked(msg: Msg) -> None:
        requests.append(msg.data)

    watch = BucketWatch(nc.jetstream(), "AMP_AGENTS")
    await watch.start()
    counting = await nc.subscribe("$JS.API.CONSUMER.MSG.NEXT.KV_AMP_AGENTS.>", cb=asked)
    await nc.flush()
    try:
        changes = watch.changes()
        for n in range(5):
            started = time.monotonic()
            await kv.put("a", str(n).encode())
            entry = await asyncio.wait_for(anext(changes), 2.0)  # not held until the fetch's 5 s timeout
            assert (entry.key, entry.value) == ("a", str(n).encode())
            assert time.monotonic() - started < 1.0
        await nc.flush()
        assert len(requests) == 1, requests
    finally:
        await counting.unsubscribe()
        await watch.stop()
