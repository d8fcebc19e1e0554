"""Signals/s through the event-bridge versus raw nats-py JetStream doing the same I/O.

    .venv/bin/python -m tests.bench.bench_bridge        (or `make bench-bridge`)

Environment: BENCH_N signals per run (default 20,000), BENCH_ROUNDS rounds of each (default 2;
the best round of each is compared), AURORA_BRIDGE_BATCH the bridge's fetch size.

Both runs use a private nats-server, streams configured exactly like AMP_SIGNALS/AMP_EVENTS,
the same payload bytes, and the same shape of work: pull a batch from the work-queue stream,
publish one message per input to the events stream with `Nats-Msg-Id` and await JetStream's
acks, then ack the inputs. The baseline skips what only the bridge does: decode, map, validate
and encode. The clock runs from the first fetch to the last stored event.
"""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from pathlib import Path

import nats
from nats.aio.client import Client as NATS
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import AckPolicy, ConsumerConfig

from aurora_cli.localnats import LocalNats
from services.event_bridge.bridge import BridgeConfig, EventBridge
from shared.clock import now_iso
from shared.contracts.signals import (
    LifecycleSignal,
    NativeEventSignal,
    SignalBase,
    encode_signal,
    signal_kind,
)
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_streams, fabric_streams
from tests.bench.common import Result, Stopwatch, best, env_int, record, run_on_service_loop, table, until

GOAL = 0.5
APPS = ("im.polaris.qq", "im.polaris.wechat", "weather")


def make_signals(n: int) -> list[SignalBase]:
    """Three native chat events for every lifecycle signal, payloads the size of real ones."""
    observed = now_iso()
    out: list[SignalBase] = []
    for i in range(n):
        common = {"signal_id": str(uuid.uuid4()), "app": APPS[i % len(APPS)],
                  "observed_at": observed}
        if i % 4 == 3:
            out.append(LifecycleSignal(**common, state="connected", reason="session initialized"))
        else:
            out.append(NativeEventSignal(**common, event={"payload": {
                "type": "message.received", "session_id": f"group_{i % 97}",
                "summary": "收到一条群消息", "source_event_type": "GroupMessageEvent",
                "data": {"text": f"你好 #{i}", "group_id": 123456, "sender": {"id": f"u{i % 50}"}},
            }}))
    return out


async def publish(nc: NATS, items: list[tuple[str, bytes, str]], window: int = 1000) -> None:
    js = nc.jetstream()
    for start in range(0, len(items), window):
        futures = [await js.publish_async(subject, data, headers={"Nats-Msg-Id": msg_id})
                   for subject, data, msg_id in items[start:start + window]]
        await asyncio.gather(*futures)


async def raw_round(nc: NATS, signals: list[SignalBase], prefix: str, batch: int) -> Result:
    subjects = Subjects(prefix)
    js = nc.jetstream()
    await ensure_streams(js, fabric_streams(subjects))
    await publish(nc, [(subjects.signal(s.app, signal_kind(s)), encode_signal(s), s.signal_id)
                       for s in signals])
    stream = subjects.stream("SIGNALS")
    await js.add_consumer(stream, config=ConsumerConfig(
        durable_name="raw", ack_policy=AckPolicy.EXPLICIT, max_ack_pending=4096,
        filter_subject=subjects.signals_all))
    sub = await js.pull_subscribe_bind("raw", stream=stream)
    done = 0
    with Stopwatch() as clock:
        while done < len(signals):
            try:
                msgs = await sub.fetch(batch, timeout=1.0)
            except (TimeoutError, NatsTimeoutError):
                continue
            futures = []
            for msg in msgs:
                # Same bytes to the events stream, under the same kind of subject and id.
                out_subject = subjects.prefix + ".evt" + msg.subject[len(subjects.prefix) + 4:]
                futures.append(await js.publish_async(
                    out_subject, msg.data, headers={"Nats-Msg-Id": msg.headers["Nats-Msg-Id"]}))
            for msg, future in zip(msgs, futures, strict=True):
                await asyncio.wait_for(future, 10)
                await msg.ack()
            done += len(msgs)
    await sub.unsubscribe()
    stored = (await js.stream_info(subjects.stream("EVENTS"))).state.messages
    assert stored == len(signals), f"raw run stored {stored} of {len(signals)}"
    return Result("raw nats-py (fetch, publish, ack)", len(signals), clock.seconds)


async def bridge_round(nc: NATS, signals: list[SignalBase], prefix: str, batch: int) -> Result:
    subjects = Subjects(prefix)
    js = nc.jetstream()
    await ensure_streams(js, fabric_streams(subjects))
    await publish(nc, [(subjects.signal(s.app, signal_kind(s)), encode_signal(s), s.signal_id)
                       for s in signals])
    async with EventBridge(nc, subjects, BridgeConfig(batch=batch)) as bridge:
        stop = asyncio.Event()
        with Stopwatch() as clock:
            running = asyncio.create_task(bridge.run(stop), name="bench-bridge")
            await until(lambda: bridge.stats.published + bridge.stats.dead_lettered >= len(signals),
                        timeout=600, what="the bridge to convert every signal")
        stop.set()
        await running
    assert bridge.stats.dead_lettered == 0, bridge.stats
    stored = (await js.stream_info(subjects.stream("EVENTS"))).state.messages
    assert stored == len(signals), f"bridge run stored {stored} of {len(signals)}"
    return Result("event-bridge (decode, map, publish, ack)", len(signals), clock.seconds)


async def main() -> None:
    n = env_int("BENCH_N", 20_000)
    rounds = env_int("BENCH_ROUNDS", 2)
    batch = env_int("AURORA_BRIDGE_BATCH", BridgeConfig().batch)
    with tempfile.TemporaryDirectory(prefix="aurora-bench-") as tmp:
        server = LocalNats(Path(tmp) / "jetstream", log_file=Path(tmp) / "nats-server.log")
        server.start()
        try:
            nc = await nats.connect(server.url, pending_size=64 * 1024 * 1024)
            signals = make_signals(n)
            raw: list[Result] = []
            bridged: list[Result] = []
            for r in range(rounds):  # interleaved, so drift on a shared machine hits both
                raw.append(await raw_round(nc, signals, f"raw{r}", batch))
                bridged.append(await bridge_round(nc, signals, f"amp{r}", batch))
                print(f"round {r + 1}/{rounds}: raw {raw[-1].rate:,.0f}/s, "
                      f"bridge {bridged[-1].rate:,.0f}/s", flush=True)
            await nc.close()
        finally:
            server.stop()
    print(f"event-bridge benchmark: N={n:,} signals, batch {batch}, best of {rounds} round(s)")
    print(table(best(raw), best(bridged), goal=GOAL))
    base, measured = best(raw), best(bridged)
    record("bridge", {"raw_per_s": base.rate, "per_s": measured.rate, "ratio": measured.rate / base.rate,
                       "goal": GOAL})


if __name__ == "__main__":
    run_on_service_loop(main())
