"""A KV mirror behind a write made elsewhere: `read_through` takes the entry the bucket holds now,
so the router finds an agent another service created a moment ago; `catch_up` takes every write
the watch has not brought, so it finds a binding applied a moment ago."""

from __future__ import annotations

import json

from nats.aio.client import Client as NATS

from services.router.catalog import RouteCatalog
from shared.contracts.run import RunTarget
from shared.contracts.subjects import Subjects
from shared.jetstream.bucket import Bucket
from shared.jetstream.kvmirror import KvMirror
from shared.jetstream.streams import agents_bucket, bindings_bucket, ensure_bucket, pipelines_bucket


async def _frozen_catalog(nc: NATS, subjects: Subjects) -> tuple[RouteCatalog, list[Bucket]]:
    """The router's catalog of the bindings, agents and pipelines buckets, loaded and then with its
    watches stopped, as lagging ones would be."""
    js = nc.jetstream()
    buckets = [await ensure_bucket(js, spec(subjects)) for spec in (bindings_bucket, agents_bucket, pipelines_bucket)]
    catalog = RouteCatalog(*buckets)
    await catalog.start()
    await catalog.stop()
    return catalog, buckets


async def test_read_through_takes_what_the_watch_has_not_brought_yet(nc: NATS, subjects: Subjects) -> None:
    kv = await ensure_bucket(nc.jetstream(), agents_bucket(subjects))
    mirror: KvMirror[bytes] = KvMirror(kv, bytes, name="agents")
    await mirror.start()
    await mirror.stop()  # the watch is behind: nothing new arrives by it
    await kv.put("late", b"written elsewhere")
    assert "late" not in mirror.items
    assert await mirror.read_through("late") == b"written elsewhere"
    assert mirror.items["late"] == b"written elsewhere"
    assert await mirror.read_through("never") is None


async def test_the_router_catalog_finds_a_target_created_a_moment_ago(nc: NATS, subjects: Subjects) -> None:
    catalog, buckets = await _frozen_catalog(nc, subjects)
    agent = {"kind": "Agent", "id": "fresh", "agent_kind": "playbook", "events": ["*"]}
    await buckets[1].put("fresh", json.dumps(agent).encode())
    assert catalog.agent("fresh") is None
    assert await catalog.read_through([RunTarget(type="agent", id="fresh"), RunTarget(type="pipeline", id="none")])
    routing = catalog.agent("fresh")
    assert routing is not None and routing.enabled
    assert not await catalog.read_through([RunTarget(type="agent", id="missing")])


async def test_catch_up_takes_every_write_a_stalled_watch_has_not_brought(nc: NATS, subjects: Subjects) -> None:
    kv = await ensure_bucket(nc.jetstream(), agents_bucket(subjects))
    await kv.put("kept", b"v1")
    await kv.put("gone", b"soon deleted")
    mirror: KvMirror[bytes] = KvMirror(kv, bytes, name="agents")
    await mirror.start()
    await mirror.stop()  # the watch is stalled
    await kv.put("kept", b"v2")
    await kv.delete("gone")
    await kv.put("new", b"fresh")
    assert mirror.items == {"kept": b"v1", "gone": b"soon deleted"}
    assert await mirror.catch_up()
    assert mirror.items == {"kept": b"v2", "new": b"fresh"}
    assert not await mirror.catch_up()  # current: nothing more to read


async def test_the_router_catalog_takes_a_binding_applied_a_moment_ago(nc: NATS, subjects: Subjects) -> None:
    catalog, buckets = await _frozen_catalog(nc, subjects)
    binding = {"kind": "Binding", "id": "fresh", "event_pattern": "message.*", "target_type": "agent",
               "target_id": "a"}
    await buckets[0].put("fresh", json.dumps(binding).encode())
    assert len(catalog.table) == 0
    assert await catalog.bindings_caught_up()
    assert [r.binding.id for r in catalog.table.ranked] == ["fresh"]
    assert not await catalog.bindings_caught_up()


async def test_a_bucket_that_cannot_be_read_leaves_the_catalog_as_it_was(nc: NATS, subjects: Subjects) -> None:
    """Routing goes on with the watched copy (the router process must not fail on it)."""
    catalog, buckets = await _frozen_catalog(nc, subjects)
    js = nc.jetstream()
    for bucket in buckets:
        await js.delete_stream(f"KV_{bucket.bucket}")
    assert not await catalog.bindings_caught_up()
    assert not await catalog.read_through([RunTarget(type="agent", id="gone")])
