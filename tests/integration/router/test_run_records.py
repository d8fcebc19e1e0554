"""The router's run records against a real nats-server: one per run, frozen from the event,
written again the same for a redelivered event, and never a run without its record."""

from __future__ import annotations

import json

from nats.aio.client import Client as NATS
from nats.js.api import KeyValueConfig, StorageType

from shared.contracts.run import run_id_for
from shared.contracts.subjects import Subjects
from shared.jetstream.run_records import decode_record
from shared.jetstream.streams import DAY, run_records_bucket
from tests.integration.router.helpers import (
    consumer_done,
    poll,
    publish_events,
    running_router,
    setup_resources_min,
    stream_count,
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
    entry = await records.get(run_id)
    assert entry.value is not None
    record = decode_record(entry.value)
    assert (record.run_id, record.target.type, record.target.id, record.binding_id) == (run_id, "agent", "chat", "all")
    assert record.event_message_id == doc["header"]["message_id"] and record.source_app == "im.polaris.qq"
    assert record.session_id == "g-1" and record.actor is not None and record.actor.id == "u-9"
    assert record.reply_target is not None and record.reply_target.session_id == "g-1"
    assert record.reply_target.message_id == "m-1" and record.reply_target.actor_id == "u-9"
    assert record.synthetic is True and record.capabilities == ("reply",)

    # The same event again (a router crashed before its ack): the same record is written again. Only
    # its route trace (which RunRecord does not decode) says when it was routed, the second time.
    await js.publish(subjects.event("im.polaris.qq", "message.received"), json.dumps(doc).encode())
    async with running_router(nc, subjects, capabilities=capabilities):
        await poll(lambda: consumer_done(js, subjects), what="the copy routed")
    again = await records.get(run_id)
    assert again.value is not None and again.revision is not None and entry.revision is not None
    assert decode_record(again.value) == record
    assert again.revision > entry.revision  # it was written again, and is the same
    assert await stream_count(js, subjects.stream("RUNS")) == 1


async def test_no_run_is_published_while_its_record_cannot_be_stored(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    await setup_resources_min(nc, subjects)
    spec = run_records_bucket(subjects)
    # A bucket that refuses every record (too small a value size): the router must hold the run back.
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
        assert await stream_count(js, subjects.stream("RUNS")) == 0
    # Once records can be stored again, the redelivered event becomes its run, with its record.
    await js.delete_key_value(spec.name)
    async with running_router(nc, subjects):
        await poll(lambda: _runs(js, subjects, 1), what="the run, once its record was stored", timeout=40)
    records = await js.key_value(spec.name)
    assert (await records.get(run_id_for(doc["header"]["message_id"], "all"))).value is not None


async def _runs(js: object, subjects: Subjects, count: int) -> bool:
    return await stream_count(js, subjects.stream("RUNS")) == count  # type: ignore[arg-type]
