"""The real bridge process: every signal kind ends as its event in AMP_EVENTS, once."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import msgspec
import pytest
from nats.aio.client import Client as NATS

from services.event_bridge.mapping import Rejected, map_signal, with_trace
from shared.contracts.signals import SIGNAL_TYPES, encode_signal
from shared.contracts.subjects import Subjects, app_token
from shared.contracts.validation import validate_event
from shared.jetstream.streams import ensure_streams, fabric_streams
from shared.nats.admin_service import admin_request
from shared.nats.signal_publisher import publish_signal
from tests.harness.processes import ServiceProcess
from tests.integration.event_bridge.helpers import (
    poll,
    read_stream,
    wait_for_count,
    wait_for_health,
)
from tests.unit.event_bridge.signals import APP, one_of_each_kind, platform_event

pytestmark = pytest.mark.usefixtures("fabric")


async def test_every_signal_kind_ends_as_its_event(
    nc: NATS, subjects: Subjects, start_bridge: Callable[[str], ServiceProcess]
) -> None:
    js = nc.jetstream()
    bridge = start_bridge("bridge-1")
    cases = [*one_of_each_kind(), *one_of_each_kind("weather"),
             (platform_event(), "approval.requested")]
    assert {type(signal) for signal, _ in cases} == set(SIGNAL_TYPES)
    for signal, _ in cases:
        ack = await publish_signal(js, subjects, signal)
        assert ack.stream == "AMP_SIGNALS" and not ack.duplicate
    await wait_for_count(js, "AMP_EVENTS", len(cases), timeout=20)
    stored = await read_stream(nc, "AMP_EVENTS")

    by_id = {m.headers["Nats-Msg-Id"]: m for m in stored}
    assert len(by_id) == len(cases)
    for signal, event_type in cases:
        mapped = map_signal(signal, subject_app_token=app_token(signal.app))
        assert not isinstance(mapped, Rejected)
        expected = with_trace(mapped, None)  # publish_signal ran outside any span: a root trace
        message = by_id[expected.header.message_id]
        assert message.subject == f"amp.evt.{app_token(signal.app)}.{event_type}"
        event = validate_event(message.data)
        assert event.header.message_id == message.headers["Nats-Msg-Id"]
        assert event.payload.type == event_type
        assert event.header.source.app == signal.app
        assert json.loads(message.data) == msgspec.to_builtins(expected)
    assert bridge.alive()


async def test_a_signal_published_twice_is_one_event(
    nc: NATS, subjects: Subjects, start_bridge: Callable[[str], ServiceProcess]
) -> None:
    js = nc.jetstream()
    start_bridge("bridge-1")
    signal, _ = one_of_each_kind()[-1]  # a native event: its message id is derived
    await publish_signal(js, subjects, signal)
    await wait_for_count(js, "AMP_EVENTS", 1, timeout=20)
    # Past the signal stream's own de-duplication (as after a publisher's retry much later):
    # the bridge derives the same message id, and the events stream drops the copy.
    await js.publish(subjects.signal(APP, "native_event"), encode_signal(signal))
    await wait_for_count(js, "AMP_SIGNALS", 0, timeout=20)
    health = await admin_request(nc, subjects, "event_bridge", "health")
    assert health["published"] == 2
    assert await _count(nc, "AMP_EVENTS") == 1


async def _count(nc: NATS, stream: str) -> int:
    return int((await nc.jetstream().stream_info(stream)).state.messages)


async def test_sigterm_stops_the_bridge_promptly_and_cleanly(
    nc: NATS, subjects: Subjects, start_bridge: Callable[[str], ServiceProcess]
) -> None:
    js = nc.jetstream()
    bridge = start_bridge("bridge-1")
    signal, _ = one_of_each_kind()[0]
    await publish_signal(js, subjects, signal)
    await wait_for_count(js, "AMP_EVENTS", 1, timeout=20)
    started = time.monotonic()
    assert bridge.terminate(timeout=8) == 0, bridge.logs()
    assert time.monotonic() - started < 5
    assert '"stopped"' in bridge.logs()


async def test_a_signal_whose_event_cannot_be_stored_yet_is_retried_not_lost(
    nc: NATS, subjects: Subjects, start_bridge: Callable[[str], ServiceProcess]
) -> None:
    js = nc.jetstream()
    start_bridge("bridge-1")
    await wait_for_health(nc, subjects)  # its start-up has made the streams: now break one
    await js.delete_stream("AMP_EVENTS")  # an operator mistake, or a stream being migrated
    signal, _ = one_of_each_kind()[0]
    await publish_signal(js, subjects, signal)

    async def retried() -> bool:
        health = await admin_request(nc, subjects, "event_bridge", "health")
        return bool(health["retried"] >= 1)

    await poll(retried, timeout=20, what="the bridge to retry the signal")
    health = await admin_request(nc, subjects, "event_bridge", "health")
    assert health["dead_lettered"] == 0 and "publishing the event failed" in health["last_error"]
    await ensure_streams(js, fabric_streams(subjects))
    await wait_for_count(js, "AMP_EVENTS", 1, timeout=20)
    (event,) = await read_stream(nc, "AMP_EVENTS")
    assert event.headers["Nats-Msg-Id"] == signal.signal_id
    await wait_for_count(js, "AMP_SIGNALS", 0, timeout=10)
    assert await _count(nc, "AMP_DLQ") == 0
