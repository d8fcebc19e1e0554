"""Helpers for the bridge's integration tests: polling, reading streams back, publishing fast."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from services.event_bridge.bridge import BridgeConfig, EventBridge
from shared.contracts.signals import SignalBase, encode_signal, signal_kind
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.processes import ServiceProcess
from tests.harness.waiting import poll as poll  # one poll helper for every test


async def wait_for_health(nc: NATS, subjects: Subjects, *, timeout: float = 20) -> None:
    """Until a bridge answers its health endpoint, i.e. has made its streams and consumer."""

    async def answers() -> bool:
        try:
            await admin_request(nc, subjects, "event_bridge", "health", timeout=0.5)
        except Exception:  # no responders yet, or a timeout
            return False
        return True

    await poll(answers, timeout=timeout, what="the bridge's health endpoint")


async def stream_count(js: JetStreamContext, stream: str) -> int:
    return int((await js.stream_info(stream)).state.messages)


async def wait_for_count(js: JetStreamContext, stream: str, count: int, *, timeout: float,
                         watch: Sequence[ServiceProcess] = ()) -> None:
    """Wait until `stream` holds exactly `count` messages; holding more while it fills (or
    fewer while it drains) past the target, or a watched process dying, fails at once."""
    last = await stream_count(js, stream)
    filling = last <= count

    async def reached() -> bool:
        nonlocal last
        for process in watch:
            assert process.alive(), f"{process.module} died:\n{process.logs()[-3000:]}"
        last = await stream_count(js, stream)
        overshot = last > count if filling else last < count
        assert not overshot, f"{stream} went past {count} messages: it holds {last}"
        return last == count

    try:
        await poll(reached, timeout=timeout, what=f"{count} messages in {stream}")
    except AssertionError as exc:
        raise AssertionError(f"{exc} (it holds {last})") from None


@dataclass(frozen=True)
class Stored:
    subject: str
    data: bytes
    headers: dict[str, str]
    sequence: int


async def read_stream(nc: NATS, stream: str, *, batch: int = 2000) -> list[Stored]:
    """Every message the stream holds now, in order, through one ephemeral pull consumer."""
    js = nc.jetstream()
    expected = await stream_count(js, stream)
    sub = await js.pull_subscribe(
        "", stream=stream,
        config=ConsumerConfig(ack_policy=AckPolicy.NONE, deliver_policy=DeliverPolicy.ALL,
                              inactive_threshold=30.0, max_waiting=1),
    )
    out: list[Stored] = []
    try:
        while len(out) < expected:
            for msg in await sub.fetch(min(batch, expected - len(out)), timeout=5):
                out.append(Stored(msg.subject, msg.data, dict(msg.headers or {}),
                                  msg.metadata.sequence.stream))
    finally:
        await sub.unsubscribe()
    return out


async def publish_all(
    js: JetStreamContext, subjects: Subjects, signals: Sequence[SignalBase], *,
    window: int = 500, pause: float = 0.0,
) -> None:
    """Publish signals as the platform does (Nats-Msg-Id = signal_id), pipelined in windows."""
    for start in range(0, len(signals), window):
        futures = [
            await js.publish_async(subjects.signal(s.app, signal_kind(s)), encode_signal(s),
                                   headers={"Nats-Msg-Id": s.signal_id})
            for s in signals[start:start + window]
        ]
        acks = await asyncio.wait_for(asyncio.gather(*futures), 30)
        assert not any(ack.duplicate for ack in acks)
        if pause:
            await asyncio.sleep(pause)


async def publish_raw(
    js: JetStreamContext, items: Sequence[tuple[str, bytes]], *, window: int = 500
) -> list[int]:
    """Publish (subject, bytes) pairs without a de-duplication id; returns stream sequences."""
    sequences: list[int] = []
    for start in range(0, len(items), window):
        futures = [await js.publish_async(subject, data) for subject, data in items[start:start + window]]
        sequences.extend(ack.seq for ack in await asyncio.wait_for(asyncio.gather(*futures), 30))
    return sequences


@contextlib.asynccontextmanager
async def running_bridge(nc: NATS, subjects: Subjects,
                         config: BridgeConfig | None = None) -> AsyncIterator[EventBridge]:
    """A real bridge in this process on `nc`, running until the block ends."""
    async with EventBridge(nc, subjects, config) as running:
        stop = asyncio.Event()
        task = asyncio.create_task(running.run(stop))
        try:
            yield running
        finally:
            stop.set()
            await asyncio.wait_for(task, 10)
