"""What a stage could not dead-letter reaches AMP_DLQ from JetStream's advisories, heard by the
listener every router process runs (shared/jetstream/advisories.py); what a stage did dead-letter is not
doubled by it. Real nats-server, a real router process."""

from __future__ import annotations

import json
from contextlib import suppress
from typing import Any

from nats.aio.client import Client as NATS
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import RawStreamMsg
from nats.js.errors import NotFoundError

from services.event_bridge.bridge import BridgeConfig, bridge_consumer
from services.runner.config import RunnerConfig
from services.runner.tasks.resumer import resume_consumer
from shared.contracts.subjects import Subjects
from shared.jetstream import deadletter as dl
from shared.jetstream.consumers import ensure_durable
from tests.harness.processes import ServiceProcess, logged
from tests.harness.waiting import poll


async def _router(spawn: Any) -> ServiceProcess:
    process: ServiceProcess = spawn("services.router", tag="router")
    await process.ready()
    return process


async def _letters(nc: NATS, subject: str = "amp.dlq.>") -> list[RawStreamMsg]:
    js = nc.jetstream()
    found: list[RawStreamMsg] = []
    seq = 1
    while True:
        try:
            msg = await js.get_msg("AMP_DLQ", seq, subject=subject, next=True)
        except NotFoundError:
            return found
        found.append(msg)
        seq = int(msg.seq or seq) + 1


async def test_a_signal_that_runs_out_of_deliveries_while_no_bridge_settles_it_reaches_the_dlq(
    nc: NATS, subjects: Subjects, spawn: Any
) -> None:
    await _router(spawn)  # its start-up made the streams; it listens to the advisories
    js = nc.jetstream()
    # The bridge that took this signal died on each delivery: a fetch that is never settled.
    # Its durable is the real one, with max_deliver 2 so that this takes a second, not minutes.
    await ensure_durable(js, "AMP_SIGNALS", bridge_consumer(BridgeConfig(max_deliver=2, backoff=(0.5,)), subjects))
    original = b'{"signal": "from an app", "text": "\xe4\xbd\xa0\xe5\xa5\xbd"}'
    headers = {"Nats-Msg-Id": "sig-advisory-1",
               "traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
    ack = await js.publish(subjects.signal("im.polaris.qq", "native_event"), original, headers=headers)
    sub = await js.pull_subscribe_bind("event-bridge", stream="AMP_SIGNALS")
    for delivery in (1, 2):
        (msg,) = await sub.fetch(1, timeout=10)
        assert msg.metadata.num_delivered == delivery
    # The server notices the last delivery ran out when it next looks for work for that durable:
    # a bridge back up pulls (here, one that finds nothing more), and the advisory goes out.
    async def one_letter() -> list[RawStreamMsg]:
        with suppress(NatsTimeoutError):
            await sub.fetch(1, timeout=0.5)
        return await _letters(nc)


    (letter,) = await poll(one_letter, timeout=20, what="the advisory's dead letter")
    assert letter.subject == "amp.dlq.event_bridge"
    assert letter.data == original
    got = letter.headers or {}
    assert got[dl.STAGE] == "event_bridge"
    assert got[dl.VIA] == "advisory"
    assert got[dl.DELIVERIES] == "2"
    assert got[dl.CONSUMER] == "event-bridge"
    assert got[dl.ORIGINAL_SUBJECT] == "amp.sig.im_polaris_qq.native_event"
    assert got[dl.ORIGINAL_STREAM] == "AMP_SIGNALS" and got[dl.ORIGINAL_SEQUENCE] == str(ack.seq)
    assert "delivered 2 times" in got[dl.REASON]
    assert got["Nats-Msg-Id"] == f"dlq:event_bridge:AMP_SIGNALS:{ack.seq}"
    assert json.loads(got[dl.ORIGINAL_HEADERS]) == headers


async def test_what_a_stage_dead_lettered_itself_is_not_doubled_by_the_advisory(
    nc: NATS, subjects: Subjects, spawn: Any
) -> None:
    router = await _router(spawn)
    js = nc.jetstream()
    # Not an event: the router dead-letters it, then terminates it. AMP_EVENTS keeps its
    # messages, so the listener still finds the original when the termination's advisory comes.
    ack = await js.publish(subjects.event("im.polaris.qq", "message.received"), b"not an event",
                           headers={"Nats-Msg-Id": "broken-1", "x-origin": "test"})
    await logged(router, "advisory: dead letter duplicate", timeout=20)  # the listener came second

    (letter,) = await _letters(nc)
    got = letter.headers or {}
    assert letter.data == b"not an event"
    assert got[dl.STAGE] == "router" and got[dl.VIA] == "stage"
    assert got[dl.CONSUMER] == "router" and got[dl.DELIVERIES] == "1"
    assert got[dl.ORIGINAL_SEQUENCE] == str(ack.seq)
    assert got[dl.REASON].startswith("invalid event")
    assert json.loads(got[dl.ORIGINAL_HEADERS]) == {"Nats-Msg-Id": "broken-1", "x-origin": "test"}


async def test_a_message_a_platform_consumer_terminated_without_a_dead_letter_reaches_the_dlq(
    nc: NATS, subjects: Subjects, spawn: Any
) -> None:
    await _router(spawn)
    js = nc.jetstream()
    # The runners' resume consumer terminates an event it cannot read (it "ignores" it): the
    # termination's advisory is all that says so. (The router dead-letters the same bytes as
    # its own stage: each stage that gave up has its dead letter.)
    await ensure_durable(js, "AMP_EVENTS", resume_consumer(RunnerConfig(), subjects))
    subject = subjects.event("aurora.gateway", "approval.granted")
    ack = await js.publish(subject, b"{unreadable", headers={"Nats-Msg-Id": "approval-broken"})
    sub = await js.pull_subscribe_bind("runner-resume", stream="AMP_EVENTS")
    (msg,) = await sub.fetch(1, timeout=10)
    await msg.term()

    async def one_letter() -> list[RawStreamMsg]:
        return await _letters(nc, "amp.dlq.runner")

    (letter,) = await poll(one_letter, timeout=20, what="the termination's dead letter")
    got = letter.headers or {}
    assert letter.subject == "amp.dlq.runner" and letter.data == b"{unreadable"
    assert got[dl.VIA] == "advisory" and got[dl.CONSUMER] == "runner-resume" and got[dl.DELIVERIES] == "1"
    assert got[dl.REASON].startswith("terminated by runner-resume")
    assert got[dl.ORIGINAL_SUBJECT] == subject and got[dl.ORIGINAL_SEQUENCE] == str(ack.seq)
