"""A refused stream delivery on the audit (shared/nats/refusal_audit.py), through the guard as the
endpoints call it, on a real nats-server: one record a stored message however often it is
delivered, at most `limit` records a window, the rest only logged; and audited by the connection
that heard it, as its service (two services in one process audit each their own)."""

from __future__ import annotations

import json

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.api import AckPolicy, ConsumerConfig, StorageType, StreamConfig

from shared.contracts.subjects import Subjects
from shared.jetstream.streams import audit_stream, ensure_streams
from shared.nats.bus import Connection, open_nats
from shared.nats.refusal_audit import ERROR_CODE, RefusalAudit
from shared.nats.request_guard import refused_delivery, refusing_deliveries
from tests.harness.clients import nats_client
from tests.harness.waiting import poll


def ack_subject(sequence: int, delivered: int = 1) -> str:
    """What nats-server sets as the reply of message `sequence` of stream ATTACK, consumer `c1`."""
    return f"$JS.ACK.ATTACK.c1.{delivered}.{sequence}.{sequence}.1733400000000000000.0"


async def records(nc: NATS, subjects: Subjects) -> list[dict[str, object]]:
    js, stream = nc.jetstream(), audit_stream(subjects).name
    info = await js.stream_info(stream)
    return [json.loads((await js.get_msg(stream, seq)).data or b"{}")
            for seq in range(max(info.state.first_seq, 1), info.state.last_seq + 1)]


async def test_refusals_are_audited_once_each_and_at_most_limit_a_window(nc: NATS, subjects: Subjects) -> None:
    await ensure_streams(nc.jetstream(), [audit_stream(subjects)])
    now = [0.0]
    audit = RefusalAudit(nc, subjects, "runner", limit=2, window=60.0, clock=lambda: now[0])
    sample = "amp.model.sample"
    assert refused_delivery("amp.sched.x", ack_subject(1), endpoint=sample, report=audit)
    assert refused_delivery("amp.sched.x", ack_subject(1, delivered=2), endpoint=sample, report=audit)  # again
    assert refused_delivery("amp.sched.x", ack_subject(2), endpoint=sample, report=audit)  # over the limit
    now[0] = 60.0  # a new window
    assert refused_delivery("amp.sched.x", ack_subject(3), endpoint=sample, report=audit)
    assert not refused_delivery(sample, "_INBOX_runner.abc", endpoint=sample, report=audit)  # a request
    await audit.sent()
    stored = await records(nc, subjects)
    assert sorted(str(r["call_id"]) for r in stored) == ["refused-runner-ATTACK-c1-1", "refused-runner-ATTACK-c1-3"]
    [first] = [r for r in stored if r["call_id"] == "refused-runner-ATTACK-c1-1"]
    assert first["caller"] == "delivery:ATTACK/c1" and first["tool"] == "amp.model.sample"
    assert first["status"] == "denied" and first["error_code"] == ERROR_CODE and first["executed"] is False
    assert "amp.sched.x" in str(first["input_summary"]) and "stream ATTACK" in str(first["input_summary"])


async def test_a_delivery_is_audited_by_the_connection_that_refused_it(
        nats_url: str, nc: NATS, subjects: Subjects) -> None:
    """Two services in one process, each its own connection and audit: a push consumer delivers a
    stored message onto each one's subscription; each refusal is audited once, by the service that
    refused it, and no handler sees a delivery."""
    js = nc.jetstream()
    await ensure_streams(js, [audit_stream(subjects)])
    await js.add_stream(StreamConfig(name="ATTACK", subjects=["amp.attack.>"], storage=StorageType.MEMORY))
    await js.publish("amp.attack.x", b"{}")
    handled: list[Msg] = []

    async def serve(msg: Msg) -> None:
        handled.append(msg)

    async with nats_client(nats_url) as runner, nats_client(nats_url) as router:
        assert isinstance(runner, Connection) and isinstance(router, Connection)
        async with RefusalAudit(runner, subjects, "runner"), RefusalAudit(router, subjects, "router"):
            for connection, subject, consumer in ((runner, "amp.model.sample", "c1"), (router, "amp.route.x", "c2")):
                await connection.subscribe(subject, cb=refusing_deliveries(subject, serve))
                await connection.flush()
                await js.add_consumer("ATTACK", ConsumerConfig(durable_name=consumer, deliver_subject=subject,
                                                               ack_policy=AckPolicy.EXPLICIT))
            expected = {(subjects.audit_refused("runner"), "refused-runner-ATTACK-c1-1", "amp.model.sample"),
                        (subjects.audit_refused("router"), "refused-router-ATTACK-c2-1", "amp.route.x")}

            async def audited() -> bool:
                return expected <= await _audited(nc, subjects)

            await poll(audited, timeout=10, what="each service's audit of the delivery it refused")
            for connection in (runner, router):  # what each audit made is published: nothing more comes
                assert isinstance(connection.refusal_sink, RefusalAudit)
                await connection.refusal_sink.sent()
            assert await _audited(nc, subjects) == expected  # one each, by the service that refused it
            assert handled == []
        assert runner.refusal_sink is None and router.refusal_sink is None


async def _audited(nc: NATS, subjects: Subjects) -> set[tuple[str, str, str]]:
    """(subject, call id, endpoint) of every record on the audit."""
    js, stream = nc.jetstream(), audit_stream(subjects).name
    last = (await js.stream_info(stream)).state.last_seq
    found = set()
    for seq in range(1, last + 1):
        msg = await js.get_msg(stream, seq)
        record = json.loads(msg.data or b"{}")
        found.add((msg.subject, str(record["call_id"]), str(record["tool"])))
    return found


async def test_a_stopped_audit_has_published_its_records_and_needs_a_connection_of_the_bus(
        nats_url: str, nc: NATS, subjects: Subjects) -> None:
    await ensure_streams(nc.jetstream(), [audit_stream(subjects)])
    runner = await open_nats(servers=nats_url)
    try:
        async with RefusalAudit(runner, subjects, "runner"):
            assert refused_delivery("amp.sched.x", ack_subject(7), endpoint="amp.model.sample",
                                    report=runner.refusal_sink)
    finally:
        await runner.close()  # as a service closes its connection once its parts have stopped
    # the audit's stop waited for its record: it is stored
    assert (subjects.audit_refused("runner"), "refused-runner-ATTACK-c1-7", "amp.model.sample") in await _audited(
        nc, subjects)

    plain = await nats.connect(nats_url)  # nats-py's own client carries no refusal sink
    try:
        with pytest.raises(TypeError, match=r"shared\.nats\.bus\.Connection"):
            await RefusalAudit(plain, subjects, "runner").start()
    finally:
        await plain.close()
