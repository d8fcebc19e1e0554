"""The router's run records against a real nats-server: one per run, frozen from the event, holding
the run (issue 38: one stored message per routed event), created once for a redelivered event."""

from __future__ import annotations

import json

import pytest
from nats.aio.client import Client as NATS
from nats.js.api import KeyValueConfig, StorageType
from nats.js.errors import NotFoundError

from shared.contracts.run import decode_recorded_run, run_id_for
from shared.contracts.subjects import Subjects
from shared.jetstream.run_records import decode_record, run_record_key
from shared.jetstream.streams import DAY, run_records_bucket
from tests.integration.router.helpers import (
    consumer_done,
    poll,
    publish_events,
    run_count,
    running_router,
    setup_resources_min,
)
from tests.unit.router.factories import event_doc


async def test_a_dispatched_run_has_one_record_frozen_from_its_event(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    await setup_resources_min(nc, subjects)
    doc = event_doc("message.received", session_id="g-1", actor={"id": "u-9", "kind": "user"},
                    subject={"kind": "message", "id": "m-1"}, synthetic=True, data={"text": "hi"})
    run_id = run_id_for(doc["header"]["message_id"], "all")
    capabilities = {"im.polaris.qq": ("reply",)}
    async with running_router(nc, subjects, capabilities=capabilities):
        await publish_events(js, subjects, [doc])
        await poll(lambda: _runs(js, subjects, 1), what="one run")
    records = await js.key_value(run_records_bucket(subjects).name)
    entry = await records.get(run_record_key(run_id))
    assert entry.value is not None
    record = decode_record(entry.value)
    assert (record.run_id, record.target.type, record.target.id, record.binding_id) == (run_id, "agent", "chat", "all")
    assert record.event_message_id == doc["header"]["message_id"] and record.source_app == "im.polaris.qq"
    assert record.session_id == "g-1" and record.actor is not None and record.actor.id == "u-9"
    assert record.reply_target is not None and record.reply_target.session_id == "g-1"
    assert record.reply_target.message_id == "m-1" and record.reply_target.actor_id == "u-9"
    assert record.synthetic is True and record.capabilities == ("reply",)
    # The record is the run: what a runner is given, the event inline.
    run = decode_recorded_run(entry.value)
    assert run.header.message_id == run_id and run.payload.event is not None
    assert run.payload.event.header.message_id == doc["header"]["message_id"]
    assert run.payload.delivery.reply_target == record.reply_target and run.payload.delivery.capabilities == ("reply",)

    # The same event again (a router crashed before its ack): the record is created once, so the
    # run is not queued twice; the second write, refused as `wrong last sequence`, counts as stored.
    await js.publish(subjects.event("im.polaris.qq", "message.received"), json.dumps(doc).encode())
    async with running_router(nc, subjects, capabilities=capabilities) as router:
        await poll(lambda: consumer_done(js, subjects), what="the copy routed")
        assert router.parts.router.stats.retried == 0, router.parts.router.stats.last_error
    again = await records.get(run_record_key(run_id))
    assert again.revision == entry.revision and again.value == entry.value
    assert await run_count(js, subjects) == 1


async def test_a_routed_event_is_one_stored_message(nc: NATS, subjects: Subjects) -> None:
    """Issue 38: the run record is the run. A routed event stores one message (its record, in
    KV_AMP_RUN_RECORDS), not a record and a run in AMP_RUNS; redelivered, still one."""
    js = nc.jetstream()
    await setup_resources_min(nc, subjects)
    records_stream = f"KV_{run_records_bucket(subjects).name}"
    before = (await js.stream_info(records_stream)).state.last_seq
    doc = event_doc("message.received")
    async with running_router(nc, subjects):
        await publish_events(js, subjects, [doc])
        await poll(lambda: _runs(js, subjects, 1), what="one run")
        await js.publish(subjects.event("im.polaris.qq", "message.received"), json.dumps(doc).encode())
        await poll(lambda: consumer_done(js, subjects), what="the copy routed")
    assert (await js.stream_info(records_stream)).state.last_seq - before == 1
    with pytest.raises(NotFoundError):  # AMP_RUNS: no longer created, nor written
        await js.stream_info(subjects.stream("RUNS"))


async def test_an_event_is_held_back_while_its_run_record_cannot_be_stored(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    await setup_resources_min(nc, subjects)
    spec = run_records_bucket(subjects)
    # A bucket that refuses every record (too small a value size): the router must hold the event back.
    await js.delete_key_value(spec.name)
    await js.create_key_value(config=KeyValueConfig(bucket=spec.name, history=1, ttl=30 * DAY, max_value_size=16,
                                                    storage=StorageType.FILE))
    doc = event_doc("message.received")
    async with running_router(nc, subjects) as router:
        await publish_events(js, subjects, [doc])

        async def retried() -> bool:
            stats = router.parts.router.stats
            return stats.retried > 0 and "run record" in (stats.last_error or "")

        await poll(retried, what="the event held back for its record")
        assert await run_count(js, subjects) == 0
    # Once records can be stored again, the redelivered event becomes its run.
    await js.delete_key_value(spec.name)
    async with running_router(nc, subjects):
        await poll(lambda: _runs(js, subjects, 1), what="the run, once its record was stored", timeout=40)
    records = await js.key_value(spec.name)
    assert (await records.get(run_record_key(run_id_for(doc["header"]["message_id"], "all")))).value is not None


async def _runs(js: object, subjects: Subjects, count: int) -> bool:
    return await run_count(js, subjects) == count  # type: ignore[arg-type]
