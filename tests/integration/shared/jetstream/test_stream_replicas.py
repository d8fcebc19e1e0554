"""AURORA_STREAM_REPLICAS: every stream, bucket, object store and watcher consumer is created
with it on a real cluster; a single server asked for more than one replica, or an existing
bucket with another count, is a clear error naming the setting; a cluster still forming (a node
not yet a JetStream peer) is waited for."""

from __future__ import annotations

import asyncio
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client as NATS

from aurora_cli.localcluster import LocalCluster, wait_jetstream
from shared.config.settings import load_settings
from shared.config.stream_plan import StreamPlan
from shared.contracts.subjects import Subjects
from shared.errors import StreamConfigConflict
from shared.jetstream.api_requests import creating
from shared.jetstream.kvwatch import BucketWatch
from shared.jetstream.streams import (
    agents_bucket,
    ensure_bucket,
    ensure_object_store,
    ensure_stream,
    events_stream,
    run_events_store,
)

THREE = load_settings({"AURORA_STREAM_REPLICAS": "3"}).stream_plan


async def test_every_kind_is_created_with_the_setting_on_a_cluster(cluster_nc: NATS, subjects: Subjects) -> None:
    js = cluster_nc.jetstream(timeout=10)
    await ensure_stream(js, events_stream(subjects), plan=THREE)
    kv = await ensure_bucket(js, agents_bucket(subjects), plan=THREE)
    await ensure_object_store(js, run_events_store(subjects), plan=THREE)
    assert (await js.stream_info("AMP_EVENTS")).config.num_replicas == 3
    assert (await js.stream_info("KV_AMP_AGENTS")).config.num_replicas == 3
    # A direct get may be answered by a replica behind its leader: reads go to the leader.
    assert not (await js.stream_info("KV_AMP_AGENTS")).config.allow_direct
    assert (await js.stream_info("OBJ_AMP_RUN_EVENTS")).config.num_replicas == 3
    await kv.put("a", b"1")
    watch = BucketWatch(js, kv.bucket, plan=kv.plan)
    await watch.start()
    try:
        assert [e.key for e in watch.initial()] == ["a"]
        [info] = await js.consumers_info("KV_AMP_AGENTS")
        assert info.config.num_replicas == 3  # survives its node, like the bucket
    finally:
        await watch.stop()
    await ensure_stream(js, events_stream(subjects), plan=THREE)  # again: the same config is no conflict


async def test_a_node_that_joins_late_is_waited_for_then_the_stream_is_placed(
        tmp_path: Path, subjects: Subjects) -> None:
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
                await creating(lambda: js.add_stream(config=spec.config(3)), f"stream {spec.name}", 3, wait=0)
            placed = asyncio.create_task(ensure_stream(js, spec, plan=THREE))
            await asyncio.to_thread(cluster.start_node, 2)
            await asyncio.wait_for(placed, 30)
            assert (await js.stream_info(spec.name)).config.num_replicas == 3
        finally:
            await nc.close()
    finally:
        cluster.stop()


async def test_more_replicas_than_servers_is_refused_naming_the_setting(nc: NATS, subjects: Subjects) -> None:
    assert load_settings({}).stream_plan == StreamPlan(replicas=1)  # the default
    with pytest.raises(StreamConfigConflict, match="AURORA_STREAM_REPLICAS"):
        await ensure_stream(nc.jetstream(), events_stream(subjects), plan=THREE)
    with pytest.raises(StreamConfigConflict, match="AURORA_STREAM_REPLICAS"):
        await ensure_bucket(nc.jetstream(), agents_bucket(subjects), plan=THREE)


async def test_an_existing_bucket_with_another_replica_count_is_a_conflict(nc: NATS, subjects: Subjects) -> None:
    await ensure_bucket(nc.jetstream(), agents_bucket(subjects))
    with pytest.raises(StreamConfigConflict, match=r"replicas=1.*replicas=2"):
        await ensure_bucket(nc.jetstream(), agents_bucket(subjects), plan=StreamPlan(replicas=2))


def test_a_plan_refuses_what_jetstream_cannot_do_and_names_its_user() -> None:
    with pytest.raises(ValueError, match="from 1 to 5"):
        StreamPlan(replicas=0)
    assert load_settings({"NATS_USER": "runner", "NATS_PASSWORD": "p"}).stream_plan.owner == "runner"
    assert load_settings({}).stream_plan.owner == "aurora"  # a server without users
    assert StreamPlan.of(1, "ann.x@example").owner == "ann_x_example"  # one token: a consumer name's prefix
