"""A signal whose event can never be stored is delivered `max_deliver` times, then
dead-lettered with a reason that names the attempts, and never delivered again.

The bridge process always runs with `BridgeConfig()`'s `max_deliver=10` (no setting changes it)
and waits `2 × deliveries` seconds before each retry, so giving up takes 90 s there. Here the real
`EventBridge` runs in the test's process, on the test's nats-server, with `max_deliver=3`: the
same code path in about 6 s (a retry after 2 s, another after 4 s).

The event cannot be stored because the events stream is gone, so each publish fails at once. A
stream that refuses the message (too large, say) fails it at once too, with the server's reason:
the bridge publishes through `shared/nats/acked_publish.py`, where nats-py's `publish_async` never
completed a refused publish (its attempts waited the whole `publish_timeout` and were reported as
"no acknowledgement").
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from services.event_bridge.bridge import BridgeConfig, EventBridge
from shared.contracts.signals import encode_signal
from shared.contracts.subjects import Subjects, app_token
from shared.jetstream import deadletter
from shared.jetstream.streams import ensure_streams, fabric_streams
from shared.nats import write_through
from shared.nats.signal_publisher import publish_signal
from tests.integration.event_bridge.helpers import poll, read_stream, running_bridge, stream_count, wait_for_count
from tests.unit.event_bridge.signals import one_of_each_kind

pytestmark = pytest.mark.usefixtures("fabric")

MAX_DELIVER = 3
ADVISORIES = "$JS.EVENT.ADVISORY.CONSUMER.*.AMP_SIGNALS.event-bridge"


@pytest.fixture
async def bridge(nats_url: str, subjects: Subjects) -> AsyncIterator[EventBridge]:
    """A real bridge on its own connection, giving up after MAX_DELIVER deliveries."""
    client = await nats.connect(nats_url)
    try:
        async with running_bridge(client, subjects, BridgeConfig(max_deliver=MAX_DELIVER, backoff=(5.0,))) as running:
            yield running
    finally:
        await client.close()


async def test_a_signal_whose_event_can_never_be_stored_is_dead_lettered_after_max_deliver(
    nc: NATS, subjects: Subjects, bridge: EventBridge
) -> None:
    js = nc.jetstream()
    advisories: list[tuple[str, dict[str, Any]]] = []

    async def on_advisory(msg: Msg) -> None:
        advisories.append((msg.subject.split(".")[4], json.loads(msg.data)))

    await nc.subscribe(ADVISORIES, cb=on_advisory)
    await write_through.flush(nc)
    consumer = await js.consumer_info("AMP_SIGNALS", "event-bridge")
    assert consumer.config.max_deliver == MAX_DELIVER  # the server redelivers no more than that

    # Its start-up made the streams: now lose the events stream (an operator's mistake, or a
    # stream being migrated), so that no event can be stored, as in test_bridge_process.py.
    await js.delete_stream("AMP_EVENTS")
    signal, _ = one_of_each_kind()[0]
    started = time.monotonic()
    ack = await publish_signal(js, subjects, signal)

    await wait_for_count(js, "AMP_DLQ", 1, timeout=20)
    gave_up_after = time.monotonic() - started
    [letter] = await read_stream(nc, "AMP_DLQ")
    headers = letter.headers
    reason = headers[deadletter.REASON]
    assert reason.startswith(f"gave up after {MAX_DELIVER} deliveries: publishing the event failed: "), reason
    assert "NoStreamResponseError" in reason, reason  # why each attempt failed
    assert letter.subject == "amp.dlq.event_bridge"
    assert headers[deadletter.STAGE] == "event_bridge"
    assert headers[deadletter.ORIGINAL_SUBJECT] == subjects.signal(signal.app, "lifecycle")
    assert headers[deadletter.ORIGINAL_STREAM] == "AMP_SIGNALS"
    assert headers[deadletter.ORIGINAL_SEQUENCE] == str(ack.seq)
    assert letter.data == encode_signal(signal)  # the original bytes, untouched
    # Retried with a delay each time, not spun through at once.
    assert gave_up_after >= 4.0, f"gave up after {gave_up_after:.1f}s"

    # The bridge's count and the server's agree: MAX_DELIVER attempts, the last one terminated
    # by the bridge (not dropped by the server for reaching max_deliver), nothing left to deliver.
    stats = bridge.stats
    assert (stats.retried, stats.dead_lettered, stats.published) == (MAX_DELIVER, 1, 0)

    async def terminated() -> bool:
        return any(kind == "MSG_TERMINATED" for kind, _ in advisories)

    await poll(terminated, timeout=5, what="the server's MSG_TERMINATED advisory")
    [term] = [a for kind, a in advisories if kind == "MSG_TERMINATED"]
    assert term["stream_seq"] == ack.seq and term["deliveries"] == MAX_DELIVER, term
    naks = [a for kind, a in advisories if kind == "MSG_NAKED"]
    assert [a["deliveries"] for a in naks] == list(range(1, MAX_DELIVER)), naks
    assert not [kind for kind, _ in advisories if kind == "MAX_DELIVERIES"], advisories
    await wait_for_count(js, "AMP_SIGNALS", 0, timeout=5)
    consumer = await js.consumer_info("AMP_SIGNALS", "event-bridge")
    assert consumer.num_pending == 0 and consumer.num_ack_pending == 0

    # The bridge goes on: once the stream is back, the next signal is an event, and the one it
    # gave up on is not.
    await ensure_streams(js, fabric_streams(subjects))
    good, good_type = one_of_each_kind()[1]
    await publish_signal(js, subjects, good)
    await wait_for_count(js, "AMP_EVENTS", 1, timeout=10)
    [event] = await read_stream(nc, "AMP_EVENTS")
    assert event.subject == f"amp.evt.{app_token(good.app)}.{good_type}"
    assert event.headers["Nats-Msg-Id"] == good.signal_id
    assert (bridge.stats.published, bridge.stats.dead_lettered) == (1, 1)
    assert await stream_count(js, "AMP_DLQ") == 1


async def test_a_refused_event_is_retried_at_once_naming_the_servers_reason(
    nc: NATS, subjects: Subjects, bridge: EventBridge
) -> None:
    js = nc.jetstream()
    events = await js.stream_info("AMP_EVENTS")
    await js.update_stream(config=replace(events.config, max_msg_size=64))  # no event is that small
    signal, _ = one_of_each_kind()[0]
    started = time.monotonic()
    await publish_signal(js, subjects, signal)

    async def refused() -> str | None:
        return bridge.stats.last_error if bridge.stats.retried else None

    reason = await poll(refused, timeout=20, what="the refused event retried")
    assert "publishing the event failed: " in reason and "maximum" in reason, reason  # the server's words
    assert time.monotonic() - started < BridgeConfig().publish_timeout  # not after waiting for an ack
    assert bridge.stats.published == 0
