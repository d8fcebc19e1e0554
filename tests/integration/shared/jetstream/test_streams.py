"""Stream and bucket bootstrap against a real nats-server: idempotent, and never silently changed."""

from __future__ import annotations

import pytest
from nats.aio.client import Client as NATS
from nats.js.api import (
    KeyValueConfig,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)

from shared.contracts.subjects import Subjects
from shared.errors import StreamConfigConflict
from shared.jetstream.streams import (
    BucketSpec,
    StreamSpec,
    ensure_bucket,
    ensure_streams,
    events_stream,
    fabric_streams,
    signals_stream,
)


async def test_ensuring_twice_is_a_no_op(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    await ensure_streams(js, fabric_streams(subjects))
    before = {s.name: s for s in fabric_streams(subjects)}
    infos = {name: await js.stream_info(name) for name in before}
    await js.publish("amp.evt.a.x", b"kept")
    await ensure_streams(js, fabric_streams(subjects))
    for name, info in infos.items():
        again = await js.stream_info(name)
        assert again.config == info.config
        assert again.created == info.created  # not re-created
    assert (await js.stream_info("AMP_EVENTS")).state.messages == 1


async def test_the_fabric_streams_have_the_contracts_shape(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    await ensure_streams(js, fabric_streams(subjects))
    events = (await js.stream_info("AMP_EVENTS")).config
    assert events.subjects == ["amp.evt.>"] and events.retention == RetentionPolicy.LIMITS
    assert events.duplicate_window == 600
    signals = (await js.stream_info("AMP_SIGNALS")).config
    assert signals.subjects == ["amp.sig.>"] and signals.retention == RetentionPolicy.WORK_QUEUE
    dlq = (await js.stream_info("AMP_DLQ")).config
    assert dlq.subjects == ["amp.dlq.>"] and dlq.storage == StorageType.FILE


async def test_another_prefix_gets_its_own_streams(nc: NATS) -> None:
    js = nc.jetstream()
    await ensure_streams(js, fabric_streams(Subjects("amp")))
    await ensure_streams(js, fabric_streams(Subjects("blue")))
    names = {info.config.name for info in await js.streams_info()}
    assert {"AMP_EVENTS", "BLUE_EVENTS", "BLUE_SIGNALS", "BLUE_DLQ"} <= names


@pytest.mark.parametrize(
    ("existing", "field"),
    [
        (StreamConfig(name="AMP_EVENTS", subjects=["amp.evt.>", "other.>"]), "subjects"),
        (StreamConfig(name="AMP_EVENTS", subjects=["amp.evt.*"]), "subjects"),
        (StreamConfig(name="AMP_EVENTS", subjects=["amp.evt.>"],
                      retention=RetentionPolicy.INTEREST), "retention"),
        (StreamConfig(name="AMP_EVENTS", subjects=["amp.evt.>"], storage=StorageType.MEMORY,
                      max_age=7 * 24 * 3600.0, duplicate_window=600.0), "storage"),
        (StreamConfig(name="AMP_EVENTS", subjects=["amp.evt.>"], max_age=3600.0,
                      duplicate_window=600.0), "max_age"),
        (StreamConfig(name="AMP_EVENTS", subjects=["amp.evt.>"], max_age=7 * 24 * 3600.0,
                      duplicate_window=5.0), "duplicate_window"),
        (StreamConfig(name="AMP_EVENTS", subjects=["amp.evt.>"], max_age=7 * 24 * 3600.0,
                      duplicate_window=600.0, max_msg_size=1024), "max_msg_size"),
    ],
    ids=["extra-subject", "narrower-subject", "retention", "storage", "max_age",
         "duplicate_window", "max_msg_size"],
)
async def test_a_conflicting_stream_is_an_error_naming_the_field(
    nc: NATS, subjects: Subjects, existing: StreamConfig, field: str
) -> None:
    js = nc.jetstream()
    await js.add_stream(config=existing)
    await js.publish("amp.evt.a", b"precious")
    before = await js.stream_info("AMP_EVENTS")
    with pytest.raises(StreamConfigConflict) as caught:
        await ensure_streams(js, [events_stream(subjects)])
    message = str(caught.value)
    assert "AMP_EVENTS" in message and f"{field}:" in message
    after = await js.stream_info("AMP_EVENTS")
    assert after.config == before.config  # never silently changed
    assert after.state.messages == before.state.messages


async def test_a_stream_of_another_name_owning_our_subjects_is_a_conflict(
    nc: NATS, subjects: Subjects
) -> None:
    js = nc.jetstream()
    await js.add_stream(name="LEGACY", subjects=["amp.sig.>"])
    with pytest.raises(StreamConfigConflict) as caught:
        await ensure_streams(js, [signals_stream(subjects)])
    assert "AMP_SIGNALS" in str(caught.value) and "LEGACY" in str(caught.value)
    assert "overlap" in str(caught.value)


async def test_a_custom_spec_round_trips(nc: NATS) -> None:
    js = nc.jetstream()
    spec = StreamSpec(name="T_RUNS", subjects=("t.run.>",), retention=RetentionPolicy.WORK_QUEUE,
                      max_age=3600.0, duplicate_window=60.0, max_msg_size=65536)
    await ensure_streams(js, [spec])
    await ensure_streams(js, [spec])
    with pytest.raises(StreamConfigConflict, match="max_msg_size"):
        await ensure_streams(js, [StreamSpec(name="T_RUNS", subjects=("t.run.>",),
                                             retention=RetentionPolicy.WORK_QUEUE, max_age=3600.0,
                                             duplicate_window=60.0)])


async def test_ensuring_a_bucket_twice_is_a_no_op(nc: NATS) -> None:
    js = nc.jetstream()
    spec = BucketSpec(name="amp_apps", history=5, ttl=3600.0)
    kv = await ensure_bucket(js, spec)
    await kv.put("im.polaris.qq", b"up")
    again = await ensure_bucket(js, spec)
    entry = await again.get("im.polaris.qq")
    assert entry.value == b"up"
    status = await again.status()
    assert status.history == 5 and float(status.ttl or 0) == 3600.0


@pytest.mark.parametrize(
    ("existing", "wanted", "field"),
    [
        (KeyValueConfig(bucket="amp_tasks", history=1), BucketSpec(name="amp_tasks", history=10),
         "history"),
        (KeyValueConfig(bucket="amp_tasks", ttl=60.0), BucketSpec(name="amp_tasks"), "ttl"),
        (KeyValueConfig(bucket="amp_tasks"), BucketSpec(name="amp_tasks", ttl=60.0), "ttl"),
    ],
    ids=["history", "ttl-found", "ttl-wanted"],
)
async def test_a_conflicting_bucket_is_an_error_naming_the_field(
    nc: NATS, existing: KeyValueConfig, wanted: BucketSpec, field: str
) -> None:
    js = nc.jetstream()
    kv = await js.create_key_value(config=existing)
    await kv.put("k", b"v")
    with pytest.raises(StreamConfigConflict) as caught:
        await ensure_bucket(js, wanted)
    assert "amp_tasks" in str(caught.value) and field in str(caught.value)
    assert (await kv.get("k")).value == b"v"
