"""A refused stream delivery on the audit (shared/nats/refusal_audit.py), through the guard as the
endpoints call it, on a real nats-server: one record a stored message however often it is
delivered, at most `limit` records a window, the rest only logged."""

from __future__ import annotations

import json

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.jetstream.streams import audit_stream, ensure_streams
from shared.nats.refusal_audit import ERROR_CODE, RefusalAudit
from shared.nats.request_guard import audit_refusals_to, refused_delivery


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
    stop = audit_refusals_to(audit)
    try:
        assert refused_delivery("amp.sched.x", ack_subject(1), endpoint="amp.model.sample")
        assert refused_delivery("amp.sched.x", ack_subject(1, delivered=2), endpoint="amp.model.sample")  # again
        assert refused_delivery("amp.sched.x", ack_subject(2), endpoint="amp.model.sample")  # over the limit
        now[0] = 60.0  # a new window
        assert refused_delivery("amp.sched.x", ack_subject(3), endpoint="amp.model.sample")
        assert not refused_delivery("amp.model.sample", "_INBOX_runner.abc", endpoint="amp.model.sample")  # a request
        await audit.sent()
    finally:
        stop()
    stored = await records(nc, subjects)
    assert sorted(str(r["call_id"]) for r in stored) == ["refused-runner-ATTACK-c1-1", "refused-runner-ATTACK-c1-3"]
    [first] = [r for r in stored if r["call_id"] == "refused-runner-ATTACK-c1-1"]
    assert first["caller"] == "delivery:ATTACK/c1" and first["tool"] == "amp.model.sample"
    assert first["status"] == "denied" and first["error_code"] == ERROR_CODE and first["executed"] is False
    assert "amp.sched.x" in str(first["input_summary"]) and "stream ATTACK" in str(first["input_summary"])
