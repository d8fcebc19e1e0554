"""`task.running` goes out without waiting for its ack; the state a run settles in waits for
every ack still out (services/runner/tasks/events.py), so a run is never acked before its events
are stored or their failure is logged. Real nats-server, no stream at first: the ack of the
running event is a failure, and it must be known by the time the settling publish returns."""

from __future__ import annotations

import logging

import msgspec
import pytest
from nats.aio.client import Client as NATS

from services.runner.tasks.events import TaskEvents
from services.runner.tasks.statemachine import new_task, transition
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_streams, fabric_streams
from shared.nats.acked_publish import AckedPublisher
from tests.unit.runner.factories import NOW, a_run, an_event


async def test_the_settling_event_waits_for_the_earlier_acks(nc: NATS, subjects: Subjects,
                                                             caplog: pytest.LogCaptureFixture) -> None:
    acks = AckedPublisher(nc)
    await acks.start()
    events = TaskEvents(acks, subjects, instance="r1", timeout=5)
    task = new_task(a_run(), an_event(), runner="r1", now=NOW)
    caplog.set_level(logging.WARNING, logger="aurora.runner.events")
    await events.publish(task)  # no stream stores signals yet: this ack is a failure, not waited for
    await events.publish(transition(task, "succeeded", by="r1", now=NOW))
    failed = [r.getMessage() for r in caplog.records if "task event not published" in r.getMessage()]
    assert len(failed) == 2, caplog.text  # the running event's failure too, before the run could be acked

    await ensure_streams(nc.jetstream(), fabric_streams(subjects))
    caplog.clear()
    again = new_task(msgspec.structs.replace(a_run(), run_id="run-2"), an_event(), runner="r1", now=NOW)
    await events.publish(again)
    await events.publish(transition(again, "failed", by="r1", now=NOW))
    assert not caplog.records, caplog.text
    signals = await nc.jetstream().stream_info(subjects.stream("SIGNALS"))
    assert signals.state.messages == 2
