"""Dead letters keep the original bytes, say why in headers, and are never doubled."""

from __future__ import annotations

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.jetstream import deadletter
from shared.jetstream.streams import ensure_streams, fabric_streams


async def test_a_dead_letter_keeps_the_bytes_and_the_reason(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    await ensure_streams(js, fabric_streams(subjects))
    original = b"\x00\xffnot json\r\n"
    stored_new = []
    for _ in range(2):  # a stage that crashed after dead-lettering does it again
        stored_new.append(await deadletter.dead_letter(
            js, subjects, stage="event_bridge", data=original,
            reason="malformed signal:\nline two", original_subject="amp.sig.a.lifecycle",
            stream="AMP_SIGNALS", sequence=42,
        ))
    assert stored_new == [True, False]  # the second is known as a copy, so no stage counts it twice
    info = await js.stream_info("AMP_DLQ")
    assert info.state.messages == 1
    stored = await js.get_msg("AMP_DLQ", seq=info.state.first_seq)
    assert stored.subject == "amp.dlq.event_bridge"
    assert stored.data == original
    headers = stored.headers or {}
    assert headers[deadletter.REASON] == "malformed signal: line two"
    assert headers[deadletter.STAGE] == "event_bridge"
    assert headers[deadletter.ORIGINAL_SUBJECT] == "amp.sig.a.lifecycle"
    assert headers[deadletter.ORIGINAL_STREAM] == "AMP_SIGNALS"
    assert headers[deadletter.ORIGINAL_SEQUENCE] == "42"
    assert headers[deadletter.AT].endswith("+00:00")


async def test_a_long_reason_is_cut_and_an_unsequenced_letter_still_lands(
    nc: NATS, subjects: Subjects
) -> None:
    js = nc.jetstream()
    await ensure_streams(js, fabric_streams(subjects))
    await deadletter.dead_letter(js, subjects, stage="router", data=b"{}", reason="x" * 5000,
                                 original_subject="amp.evt.a.b")
    stored = await js.get_msg("AMP_DLQ", seq=1)
    assert stored.subject == "amp.dlq.router"
    assert len((stored.headers or {})[deadletter.REASON]) == 1000
    assert deadletter.ORIGINAL_SEQUENCE not in (stored.headers or {})
