"""Reading a whole bucket sees every key, every time (the router's admin reads and catalogs)."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NATS

from shared.jetstream.kvmirror import KvMirror, read_all
from shared.jetstream.streams import BucketSpec, ensure_bucket


async def test_read_all_and_mirrors_never_miss_entries_already_stored(nc: NATS) -> None:
    kv = await ensure_bucket(nc.jetstream(), BucketSpec(name="SNAPSHOT", history=5))
    assert await read_all(kv) == {}
    for n in range(300):
        await kv.put(f"k{n}", str(n).encode())
    await kv.delete("k7")
    for _ in range(25):
        found = await read_all(kv)
        assert len(found) == 299 and "k7" not in found and found["k299"] == b"299"
        mirror = KvMirror(kv, bytes.decode, name="snapshot")
        await mirror.start()
        assert len(mirror.items) == 299
        await mirror.stop()
    mirror = KvMirror(kv, bytes.decode, name="snapshot")
    await mirror.start()
    await kv.put("k7", b"back")
    for _ in range(100):
        if mirror.items.get("k7") == "back":
            break
        await asyncio.sleep(0.02)
    assert mirror.items.get("k7") == "back"
    await mirror.stop()
