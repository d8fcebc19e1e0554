"""A real bridge process against a real nats-server, fed random native-event signals: each one
becomes an event in AMP_EVENTS or a dead letter in AMP_DLQ with its reason — nothing vanishes,
nothing is left owed, and the bridge stays up.

Hypothesis draws a few batches; after each batch the test waits for the positive sign that all
of it was processed (the two streams together grew by exactly the batch), then checks.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any

import nats
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from shared.contracts.subjects import Subjects
from shared.contracts.validation import validate_event
from shared.jetstream import deadletter
from tests.harness.processes import ServiceProcess
from tests.integration.event_bridge.helpers import poll, publish_raw, read_stream, stream_count
from tests.unit.fuzz.strategies import any_json, mutated, native_events

SUBJECT = "amp.sig.im_polaris_qq.native_event"
_body = st.fixed_dictionaries({
    "kind": st.just("native_event"), "signal_id": st.just("s"), "app": st.just("im.polaris.qq"),
    "observed_at": st.just("2026-06-19T12:00:00+08:00"),
    "event": native_events | any_json,
})
# Near-valid signal bodies (one field changed), valid ones, and bytes that are no JSON at all.
_payloads = st.one_of(
    mutated(_body).map(lambda case: case[0]),
    _body,
    st.binary(max_size=60),
)


def _unique(payload: dict[str, Any] | bytes) -> bytes:
    """The payload with its ids made unique, so JetStream never drops one as a duplicate
    (a dropped duplicate is correct, but it would leave nothing to count)."""
    if isinstance(payload, bytes):
        return payload
    if "signal_id" in payload:
        payload["signal_id"] = str(uuid.uuid4())
    event = payload.get("event")
    header = event.get("header") if isinstance(event, dict) else None
    if isinstance(header, dict) and isinstance(header.get("message_id"), str):
        header["message_id"] = f"m-{uuid.uuid4()}"
    return json.dumps(payload).encode()


async def _publish_and_count(url: str, batch: list[bytes], bridge: ServiceProcess) -> None:
    nc = await nats.connect(url)
    try:
        js = nc.jetstream()
        before = await stream_count(js, "AMP_EVENTS") + await stream_count(js, "AMP_DLQ")
        await publish_raw(js, [(SUBJECT, data) for data in batch])
        total = before + len(batch)

        async def all_processed() -> bool:
            assert bridge.alive(), bridge.logs()[-3000:]
            done = await stream_count(js, "AMP_EVENTS") + await stream_count(js, "AMP_DLQ")
            assert done <= total, f"{done} outcomes for {total} signals"
            return done == total

        await poll(all_processed, timeout=30, what=f"{len(batch)} signals to become events or dead letters")
        consumer = await js.consumer_info("AMP_SIGNALS", "event-bridge")
        assert consumer.num_pending == 0
    finally:
        await nc.close()


async def _check_outcomes(url: str) -> tuple[int, int]:
    nc = await nats.connect(url)
    try:
        events, letters = await read_stream(nc, "AMP_EVENTS"), await read_stream(nc, "AMP_DLQ")
        for stored in events:
            event = validate_event(stored.data)  # what the bridge published, any reader takes
            assert stored.subject == f"amp.evt.im_polaris_qq.{event.payload.type}"
        for letter in letters:
            assert letter.headers[deadletter.REASON].strip(), letter.headers
            assert letter.headers[deadletter.ORIGINAL_SUBJECT] == SUBJECT
        await poll(_owes_nothing(nc), timeout=10, what="the bridge to ack every signal")
        return len(events), len(letters)
    finally:
        await nc.close()


def _owes_nothing(nc: nats.NATS) -> Callable[[], Any]:
    async def check() -> bool:
        consumer = await nc.jetstream().consumer_info("AMP_SIGNALS", "event-bridge")
        return consumer.num_pending == 0 and consumer.num_ack_pending == 0
    return check


def test_random_signals_each_become_an_event_or_a_dead_letter(
    nats_url: str, subjects: Subjects, start_bridge: Callable[[str], ServiceProcess]
) -> None:
    bridge = start_bridge("bridge-fuzz")
    published = 0

    # One bridge and one server for every example: that is the point (it must stay up). No
    # shrinking: each try waits for the bridge, and the failing batch is shown whole anyway.
    @settings(max_examples=4, deadline=None, derandomize=True, database=None,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(st.lists(_payloads, min_size=8, max_size=12))
    def batch(payloads: list[dict[str, Any] | bytes]) -> None:
        nonlocal published
        data = [_unique(p) for p in payloads]
        asyncio.run(_publish_and_count(nats_url, data, bridge))
        published += len(data)

    batch()
    events, letters = asyncio.run(_check_outcomes(nats_url))
    assert events + letters == published >= 30
    assert events and letters  # both outcomes were exercised
    assert bridge.alive()
