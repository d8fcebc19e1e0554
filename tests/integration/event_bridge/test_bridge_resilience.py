"""Several bridges at once, and bridges SIGKILLed mid-stream: every signal becomes exactly one
event, with the message id it was always going to have."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable

import pytest
from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError
from nats.js import JetStreamContext

from services.event_bridge.mapping import Rejected, map_signal
from shared.contracts.signals import LifecycleSignal, NativeEventSignal, Signal
from shared.contracts.subjects import Subjects, app_token
from tests.harness.broker import Broker
from tests.harness.processes import ServiceProcess
from tests.integration.event_bridge.helpers import (
    poll,
    publish_all,
    read_stream,
    stream_count,
    wait_for_count,
)
from tests.unit.event_bridge.signals import base

pytestmark = pytest.mark.usefixtures("fabric")

APPS = ["im.polaris.qq", "im.polaris.wechat", "weather"]


def _signals(n: int) -> list[Signal]:
    """A mix of native events (whose ids the bridge derives) and lifecycle signals."""
    out: list[Signal] = []
    for i in range(n):
        app = APPS[i % len(APPS)]
        if i % 4 == 3:
            out.append(LifecycleSignal(**base(app=app), state="connected", reason=f"#{i}"))
        else:
            out.append(NativeEventSignal(**base(app=app), event={"payload": {
                "type": "message.received", "session_id": f"s{i % 17}", "data": {"i": i}}}))
    return out


def _expected_ids(signals: list[Signal]) -> set[str]:
    ids = set()
    for signal in signals:
        event = map_signal(signal, subject_app_token=app_token(signal.app))
        assert not isinstance(event, Rejected)
        ids.add(event.header.message_id)
    assert len(ids) == len(signals)
    return ids


async def _assert_exactly_once(nc: NATS, expected: set[str]) -> None:
    stored = await read_stream(nc, "AMP_EVENTS")
    header_ids = [m.headers["Nats-Msg-Id"] for m in stored]
    body_ids = [json.loads(m.data)["header"]["message_id"] for m in stored]
    assert header_ids == body_ids
    assert len(stored) == len(expected)
    assert len(set(body_ids)) == len(body_ids), "a message_id is in AMP_EVENTS twice"
    assert set(body_ids) == expected


async def _assert_drained(nc: NATS) -> None:
    js = nc.jetstream()
    await wait_for_count(js, "AMP_SIGNALS", 0, timeout=30)
    consumer = await js.consumer_info("AMP_SIGNALS", "event-bridge")
    assert consumer.num_pending == 0 and consumer.num_ack_pending == 0
    assert await stream_count(js, "AMP_DLQ") == 0


async def test_two_bridges_share_the_work_without_duplicates(
    nc: NATS, subjects: Subjects, start_bridge: Callable[[str], ServiceProcess]
) -> None:
    js = nc.jetstream()
    bridges = [start_bridge("bridge-a"), start_bridge("bridge-b")]
    signals = _signals(3000)
    await publish_all(js, subjects, signals)
    await wait_for_count(js, "AMP_EVENTS", len(signals), timeout=60, watch=bridges)
    await _assert_drained(nc)
    await _assert_exactly_once(nc, _expected_ids(signals))
    assert all(b.alive() for b in bridges)

    async def both_pulling() -> bool:
        info = await js.consumer_info("AMP_SIGNALS", "event-bridge")
        return bool(info.num_waiting == 2)  # one open pull request per bridge

    await poll(both_pulling, timeout=10, what="both bridges pulling from the one consumer")


async def test_ten_thousand_signals_survive_sigkilled_bridges(
    nc: NATS, subjects: Subjects, start_bridge: Callable[[str], ServiceProcess]
) -> None:
    js = nc.jetstream()
    signals = _signals(10_000)
    expected = _expected_ids(signals)
    bridge = start_bridge("bridge-1")
    # Publishing is spread out so that the kills land while signals are still arriving.
    publishing = asyncio.create_task(publish_all(js, subjects, signals, window=250, pause=0.05))
    kills = 0
    for threshold in (1500, 4500, 7500):
        await poll(lambda t=threshold: _at_least(nc, t), timeout=60,
                         what=f"{threshold} events before kill #{kills + 1}")
        # Kill while the bridge holds delivered, unacked signals: a kill between two batches
        # would interrupt nothing, and the redelivery check below would depend on luck.
        await poll(lambda: _in_flight(js), timeout=30, what=f"signals in flight before kill #{kills + 1}")
        bridge.kill()
        kills += 1
        assert not bridge.alive()
        bridge.start()
        await bridge.ready()  # the restarted one's ready file: the killed one's went at its start
    await publishing
    await wait_for_count(js, "AMP_EVENTS", len(signals), timeout=60, watch=[bridge])
    await _assert_drained(nc)
    await _assert_exactly_once(nc, expected)
    # The kills interrupted work in flight (else this test would prove nothing): some signals
    # were delivered more than once, and still became one event each.
    consumer = await js.consumer_info("AMP_SIGNALS", "event-bridge")
    assert consumer.delivered.consumer_seq > len(signals)
    assert kills == 3 and bridge.alive()
    assert bridge.logs().count('"started"') == 4


async def _in_flight(js: JetStreamContext) -> bool:
    info = await js.consumer_info("AMP_SIGNALS", "event-bridge")
    return info.num_ack_pending > 0


async def _at_least(nc: NATS, count: int) -> bool:
    return await stream_count(nc.jetstream(), "AMP_EVENTS") >= count


async def test_a_nats_server_restart_loses_nothing(
    nc: NATS, subjects: Subjects, broker: Broker, start_bridge: Callable[[str], ServiceProcess]
) -> None:
    """On either broker the harness starts: the local nats-server, or the container (restarted
    with Docker) when a Docker engine answers."""
    js = nc.jetstream()
    bridge = start_bridge("bridge-1")
    signals = _signals(4000)
    await publish_all(js, subjects, signals[:2000])
    await poll(lambda: _at_least(nc, 500), timeout=30, what="the bridge to get going")
    broker.restart()  # mid-stream: the bridge has work fetched, published and unacknowledged
    await poll(_jetstream_answers(nc), timeout=20, what="JetStream to answer again")
    await publish_all(js, subjects, signals[2000:])
    await wait_for_count(js, "AMP_EVENTS", len(signals), timeout=60, watch=[bridge])
    await _assert_drained(nc)
    await _assert_exactly_once(nc, _expected_ids(signals))
    assert "nats reconnected" in bridge.logs()


def _jetstream_answers(nc: NATS) -> Callable[[], Awaitable[bool]]:
    # `nc.is_connected` stays true until the client notices the dead socket: ask for real.
    async def check() -> bool:
        try:
            await nc.jetstream(timeout=0.5).stream_info("AMP_EVENTS")
        except NatsError:  # reconnecting, timed out, or JetStream not ready yet: anything else fails
            return False
        return True

    return check
