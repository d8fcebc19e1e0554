"""A KV mirror follows its bucket through a named pull consumer (shared/kvwatch.py): a change
is applied as it arrives, and a consumer that went away is created again from the revision
after the last one seen, so no change is lost."""

from __future__ import annotations

import asyncio
import time

from nats.aio.client import Client as NATS

from shared.kvmirror import KvMirror, read_all
from shared.streams import agents_bucket, ensure_bucket
from shared.subjects import Subjects
from tests.integration.runner.helpers import poll


async def _consumers(nc: NATS, stream: str) -> list[str]:
    return [info.name for info in await nc.jetstream().consumers_info(stream)]


async def test_the_mirror_follows_changes_at_once_and_survives_losing_its_consumer(
        nc: NATS, subjects: Subjects) -> None:
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
    finally:
        await mirror.stop()
    assert await read_all(kv) == {"a": b"3", "c": b"1"}
