"""1,000 malformed signals → 1,000 dead letters with reasons; nothing left to redeliver; the
bridge alive, healthy and still converting."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.signals import (
    LifecycleSignal,
    NativeEventSignal,
    ToolResultSignal,
    encode_signal,
)
from shared.contracts.subjects import Subjects
from shared.jetstream import deadletter
from shared.nats.admin_service import admin_request
from shared.nats.signal_publisher import publish_signal
from tests.harness.processes import ServiceProcess
from tests.integration.event_bridge.helpers import (
    poll,
    publish_raw,
    read_stream,
    stream_count,
    wait_for_count,
)
from tests.unit.event_bridge.signals import base, one_of_each_kind

pytestmark = pytest.mark.usefixtures("fabric")

N = 1000
# What the dead letter's reason must say for each kind of bad input.
REASONS = {
    "garbage": "malformed signal",
    "schema": "malformed signal",
    "impersonation": "impersonation",
    "reserved": "reserved type",
    "kind": "arrived on",
    "subject": "is not <prefix>.sig.<app>.<kind>",
    "native": "invalid aurora/event",
    "expired": "expired",
    "identity": "invalid signal",
    "deep": "maximum recursion depth",
}


def _malformed(i: int, rng: random.Random) -> tuple[str, str, bytes]:
    """(category, subject, bytes) for the i-th bad signal."""
    category = list(REASONS)[i % len(REASONS)]
    qq = "amp.sig.im_polaris_qq"
    if category == "garbage":
        return category, f"{qq}.lifecycle", rng.randbytes(rng.randint(0, 64)) + b"\xff"
    if category == "schema":
        body = {"kind": "tool_result", **base(), "tool": "t", "outcome": "exploded"}
        return category, f"{qq}.tool_result", json.dumps(body).encode()
    if category == "impersonation":
        signal = LifecycleSignal(**base(app="im.polaris.wechat"), state="connected")
        return category, f"{qq}.lifecycle", encode_signal(signal)
    if category == "reserved":
        event_type = rng.choice(["tool.succeeded", "app.connected", "task.done", "tool"])
        signal = NativeEventSignal(**base(), event={"payload": {"type": event_type}})
        return category, f"{qq}.native_event", encode_signal(signal)
    if category == "kind":
        signal = ToolResultSignal(**base(), tool="t", outcome="succeeded", status="ok",
                                  duration_ms=1.0)
        return category, f"{qq}.lifecycle", encode_signal(signal)
    if category == "subject":
        signal = LifecycleSignal(**base(), state="connected")
        return category, f"{qq}.extra.lifecycle", encode_signal(signal)
    if category == "native":
        signal = NativeEventSignal(**base(), event={"payload": {"type": "message.received",
                                                                "data": "not an object"}})
        return category, f"{qq}.native_event", encode_signal(signal)
    if category == "expired":
        signal = NativeEventSignal(**base(), event={"payload": {
            "type": "message.received", "expire_at": "2020-01-01T00:00:00Z"}})
        return category, f"{qq}.native_event", encode_signal(signal)
    if category == "identity":
        signal = LifecycleSignal(**base(signal_id=""), state="connected")
        return category, f"{qq}.lifecycle", encode_signal(signal)
    # Nested deeper than any decoder will follow.
    signal = NativeEventSignal(**base(), event={"payload": {"type": "message.received"}})
    deep = encode_signal(signal).replace(b'"payload"', b'"deep":' + b"[" * 5000 + b"]" * 5000
                                         + b',"payload"')
    return category, f"{qq}.native_event", deep


async def test_malformed_signals_are_dead_lettered_and_the_bridge_keeps_working(
    nc: NATS, subjects: Subjects, start_bridge: Callable[[str], ServiceProcess]
) -> None:
    js = nc.jetstream()
    rng = random.Random(2)
    bad = [_malformed(i, rng) for i in range(N)]
    bridge = start_bridge("bridge-1")
    sequences = await publish_raw(js, [(subject, data) for _, subject, data in bad])
    sent = {seq: item for seq, item in zip(sequences, bad, strict=True)}

    await wait_for_count(js, "AMP_DLQ", N, timeout=60, watch=[bridge])
    letters = await read_stream(nc, "AMP_DLQ")
    assert len(letters) == N
    seen: Counter[str] = Counter()
    for letter in letters:
        assert letter.subject == "amp.dlq.event_bridge"
        headers = letter.headers
        assert headers[deadletter.STAGE] == "event_bridge"
        assert headers[deadletter.ORIGINAL_STREAM] == "AMP_SIGNALS"
        category, subject, data = sent[int(headers[deadletter.ORIGINAL_SEQUENCE])]
        assert letter.data == data  # the original bytes, untouched
        assert headers[deadletter.ORIGINAL_SUBJECT] == subject
        assert REASONS[category] in headers[deadletter.REASON], (category, headers)
        seen[category] += 1
    assert set(seen) == set(REASONS) and sum(seen.values()) == N
    assert await stream_count(js, "AMP_EVENTS") == 0

    # Nothing is left to redeliver: the work queue is empty and the consumer owes nothing.
    await wait_for_count(js, "AMP_SIGNALS", 0, timeout=10)
    consumer = await js.consumer_info("AMP_SIGNALS", "event-bridge")
    assert consumer.num_pending == 0 and consumer.num_ack_pending == 0
    assert consumer.num_redelivered == 0

    # Still alive, still converting, and saying so.
    assert bridge.alive()
    good, event_type = one_of_each_kind()[0]
    await publish_signal(js, subjects, good)
    await wait_for_count(js, "AMP_EVENTS", 1, timeout=20)
    (event,) = await read_stream(nc, "AMP_EVENTS")
    assert event.subject == f"amp.evt.im_polaris_qq.{event_type}"
    assert event.headers["Nats-Msg-Id"] == good.signal_id

    async def healthy() -> bool:
        health = await admin_request(nc, subjects, "event_bridge", "health")
        assert health["status"] == "ok"
        return bool(health["published"] == 1)

    await poll(healthy, timeout=10, what="the health endpoint to count the good event")
    health = await admin_request(nc, subjects, "event_bridge", "health")
    assert health["dead_lettered"] == N and health["retried"] == 0
    assert bridge.alive()
