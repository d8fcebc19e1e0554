"""AURORA_STREAM_REPLICAS: every stream, bucket, object store and watcher consumer is created
with it on a real cluster; a single server asked for more than one replica, or an existing
bucket with another count, is a clear error naming the setting; a cluster still forming (a node
not yet a JetStream peer) is waited for."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client as NATS

from aurora_cli.localcluster import LocalCluster, wait_jetstream
from shared.errors import StreamConfigConflict
from shared.kvwatch import BucketWatch
from shared.streams import (
    agents_bucket,
    creating,
    ensure_bucket,
    ensure_object_store,
    ensure_stream,
    events_stream,
    run_events_store,
    stream_replicas,
    use_replicas,
)
from shared.subjects import Subjects


@pytest.fixture
def replicas_of_three() -> Iterator[None]:
    use_replicas(3)
    try:
        yield
    finally:
        use_replicas(1)


async def test_every_kind_is_created_with_the_setting_on_a_cluster(
        cluster_nc: NATS, subjects: Subjects, replicas_of_three: None) -> None:
    js = cluster_nc.jetstream(timeout=10)
    await ensure_stream(js, events_stream(subjects))
    kv = await ensure_bucket(js, agents_bucket(subjects))
    await ensure_object_store(js, run_events_store(subjects))
    assert (await js.stream_info("AMP_EVENTS")).config.num_replicas == 3
    assert (await js.stream_info("KV_AMP_AGENTS")).config.num_replicas == 3
    assert (await js.stream_info("OBJ_AMP_RUN_EVENTS")).config.num_replicas == 3
    await kv.put("a", b"1")
    watch = BucketWatch(js, kv.bucket)
    try:
        assert [e.key for e in await watch.initial()] == ["a"]
        [info] = await js.consumers_info("KV_AMP_AGENTS")
        assert info.config.num_replicas == 3  # survives its node, like the bucket
    finally:
        await watch.stop()
    await ensure_stream(js, events_stream(subjects))  # again: the same config is no conflict


async def test_a_node_that_joins_late_is_waited_for_then_the_stream_is_placed(
        tmp_path: Path, subjects: Subjects, replicas_of_three: None) -> None:
    cluster = LocalCluster(tmp_path / "cluster", 3, log_dir=tmp_path)
    cluster.start_node(0)
    cluster.start_node(1)  # a quorum elects the meta leader; node 2 is not a peer yet
    try:
        nc = await nats.connect(servers=cluster.urls[:2])
        try:
            await wait_jetstream(nc)
            js = nc.jetstream(timeout=10)
            spec = events_stream(subjects)
            with pytest.raises(StreamConfigConflict, match="AURORA_STREAM_REPLICAS"):  # not waiting: refused
                await creating(lambda: js.add_stream(config=spec.config()), f"stream {spec.name}", 3, wait=0)
            placed = asyncio.create_task(ensure_stream(js, spec))
            await asyncio.to_thread(cluster.start_node, 2)
            await asyncio.wait_for(placed, 30)
            assert (await js.stream_info(spec.name)).config.num_replicas == 3
        finally:
            await nc.close()
    finally:
        cluster.stop()


async def test_more_replicas_than_servers_is_refused_naming_the_setting(nc: NATS, subjects: Subjects) -> None:
    assert stream_replicas() == 1  # the default
    with pytest.raises(StreamConfigConflict, match="AURORA_STREAM_REPLICAS"):
        await ensure_stream(nc.jetstream(), events_stream(subjects), replicas=3)
    with pytest.raises(StreamConfigConflict, match="AURORA_STREAM_REPLICAS"):
        await ensure_bucket(nc.jetstream(), agents_bucket(subjects), replicas=3)


async def test_an_existing_bucket_with_another_replica_count_is_a_conflict(nc: NATS, subjects: Subjects) -> None:
    await ensure_bucket(nc.jetstream(), agents_bucket(subjects))
    with pytest.raises(StreamConfigConflict, match=r"replicas=1.*replicas=2"):
        await ensure_bucket(nc.jetstream(), agents_bucket(subjects), replicas=2)


def test_use_replicas_refuses_what_jetstream_cannot_do() -> None:
    with pytest.raises(ValueError, match="from 1 to 5"):
        use_replicas(0)
