"""Messages counted, not estimated: how many a measured run STORED (per stream, KV buckets being
streams `KV_<bucket>`) and how many each process SENT and RECEIVED (per connection name, from
nats-server's monitoring endpoint `/connz`).

Stored: a stream's last sequence before and after (every message appended counts, even one a
work queue has removed since or a KV key's newer revision has replaced), less the writes made by
the clock rather than by the work (`timed`: each gateway's heartbeat in the call ledger's bucket,
one a second however many events there are), which are counted beside it. Sent: nats-server's
`in_msgs` of a connection (what the process published, request and ack messages included), and
received: its `out_msgs` (what the server delivered to it). Services name their connection
`aurora-<service>` (shared/service.py); connections of one name are added up.

    counter = MessageCounter(js, monitor_url)
    before = await counter.snapshot()
    ... the measured run ...
    usage = per_unit(before, await counter.snapshot(), units=n)
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import Awaitable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from tests.bench.resources import CpuMeter

T = TypeVar("T")


@dataclass(frozen=True)
class Traffic:
    """What one connection name has sent to nats-server and received from it."""

    sent: int = 0
    received: int = 0


@dataclass(frozen=True)
class Snapshot:
    """Each stream's last sequence and each connection name's traffic at one moment."""

    stored: Mapping[str, int] = field(default_factory=dict)
    traffic: Mapping[str, Traffic] = field(default_factory=dict)
    timed: Mapping[str, int] = field(default_factory=dict)  # of `stored`, writes made by the clock


@dataclass(frozen=True)
class Counts:
    """Messages per unit (per event, per call) between two snapshots."""

    stored: dict[str, float]
    sent: dict[str, float]
    received: dict[str, float]
    timed: dict[str, int] = field(default_factory=dict)  # left out of `stored`: how many, not per unit

    @property
    def stored_total(self) -> float:
        return sum(self.stored.values())

    @property
    def sent_total(self) -> float:
        return sum(self.sent.values())

    def as_json(self) -> dict[str, object]:
        return {"stored": self.stored, "stored_total": self.stored_total, "sent": self.sent,
                "sent_total": self.sent_total, "received": self.received, "timed": self.timed}


def traffic_by_name(connz: Mapping[str, object]) -> dict[str, Traffic]:
    """`/connz`'s connections added up by name (an unnamed one is `(unnamed)`)."""
    found: dict[str, Traffic] = {}
    connections = connz.get("connections") or []
    assert isinstance(connections, list)
    for conn in connections:
        name = str(conn.get("name") or "(unnamed)")
        was = found.get(name, Traffic())
        found[name] = Traffic(was.sent + int(conn.get("in_msgs", 0)), was.received + int(conn.get("out_msgs", 0)))
    return found


def per_unit(before: Snapshot, after: Snapshot, *, units: int, ignore: Iterable[str] = ()) -> Counts:
    """The growth between two snapshots divided by `units`; names in `ignore` (the benchmark's
    own connection, the baseline's streams) and whatever did not change are left out. A stream
    or connection new since `before` counts from zero."""
    if units <= 0:
        raise ValueError("units must be positive")
    skipped = set(ignore)
    timed = {name: count - before.timed.get(name, 0) for name, count in after.timed.items()
             if name not in skipped and count != before.timed.get(name, 0)}
    grown = {name: seq - before.stored.get(name, 0) - timed.get(name, 0) for name, seq in after.stored.items()
             if name not in skipped}
    stored = {name: growth / units for name, growth in grown.items() if growth}
    sent: dict[str, float] = {}
    received: dict[str, float] = {}
    for name, now in after.traffic.items():
        if name in skipped:
            continue
        was = before.traffic.get(name, Traffic())
        if now.sent != was.sent:
            sent[name] = (now.sent - was.sent) / units
        if now.received != was.received:
            received[name] = (now.received - was.received) / units
    return Counts(dict(sorted(stored.items())), dict(sorted(sent.items())), dict(sorted(received.items())),
                  dict(sorted(timed.items())))


def add(total: Snapshot, before: Snapshot, after: Snapshot) -> Snapshot:
    """`total` plus the growth from `before` to `after` (several measured stretches as one)."""
    stored = dict(total.stored)
    for name, seq in after.stored.items():
        stored[name] = stored.get(name, 0) + seq - before.stored.get(name, 0)
    traffic = dict(total.traffic)
    for name, now in after.traffic.items():
        was, sum_ = before.traffic.get(name, Traffic()), traffic.get(name, Traffic())
        traffic[name] = Traffic(sum_.sent + now.sent - was.sent, sum_.received + now.received - was.received)
    timed = dict(total.timed)
    for name, count in after.timed.items():
        timed[name] = timed.get(name, 0) + count - before.timed.get(name, 0)
    return Snapshot(stored, traffic, timed)


async def last_sequences(js: JetStreamContext) -> dict[str, int]:
    """Every stream's last sequence, by stream name."""
    return {info.config.name: int(info.state.last_seq) for info in await js.streams_info() if info.config.name}


class MessageCounter:
    """Reads the counts from a live nats-server: stream info over JetStream, `/connz` over HTTP."""

    def __init__(self, js: JetStreamContext, monitor_url: str) -> None:
        self._js = js
        self._monitor_url = monitor_url.rstrip("/")
        self._timed: dict[str, int] = {}

    async def count_timed(self, nc: NATS, stream: str, subject: str) -> None:
        """Count the messages published on `subject` (stored in `stream`) as the clock's writes,
        left out of the stored counts (a core subscription sees each one the server takes)."""
        self._timed.setdefault(stream, 0)

        async def seen(_: Msg) -> None:
            self._timed[stream] += 1

        await nc.subscribe(subject, cb=seen)
        await nc.flush()

    async def snapshot(self) -> Snapshot:
        stored = await last_sequences(self._js)
        connz = await asyncio.to_thread(self._connz)
        return Snapshot(stored, traffic_by_name(connz), dict(self._timed))

    async def settled(self, *, quiet: float = 0.3, timeout: float = 30.0) -> Snapshot:
        """A snapshot once no stream has grown for `quiet` seconds: the writes that follow a
        reply (a run's last records) belong to the run that made them."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        last = await self.snapshot()
        while True:
            await asyncio.sleep(quiet)
            now = await self.snapshot()
            if now.stored == last.stored or loop.time() > deadline:
                return now
            last = now

    def _connz(self) -> dict[str, object]:
        with urllib.request.urlopen(f"{self._monitor_url}/connz?limit=4096", timeout=10) as answer:
            found = json.loads(answer.read())
        assert isinstance(found, dict)
        return found


async def counted(counter: MessageCounter, total: Snapshot, work: Awaitable[T],
                  cpu: CpuMeter | None = None) -> tuple[T, Snapshot]:
    """`work`'s result, and `total` plus what it stored and sent (each side read once settled);
    `cpu` measures the same stretch, the writes after the last reply included."""
    before = await counter.settled()
    if cpu is not None:
        cpu.start()
    result = await work
    after = await counter.settled()
    if cpu is not None:
        cpu.stop()
    return result, add(total, before, after)


def lines(title: str, counts: Counts) -> list[str]:
    """The counts as the benchmark prints them."""
    timed = ", ".join(f"{k} {v}" for k, v in counts.timed.items())
    return [f"  {title}: {counts.stored_total:.2f} stored, {counts.sent_total:.2f} sent",
            "    stored: " + ", ".join(f"{k} {v:.2f}" for k, v in counts.stored.items())
            + (f" (not counted, written by the clock: {timed})" if timed else ""),
            "    sent: " + ", ".join(f"{k} {v:.2f}" for k, v in counts.sent.items()),
            "    received: " + ", ".join(f"{k} {v:.2f}" for k, v in counts.received.items())]
