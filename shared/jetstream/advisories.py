"""Dead letters a stage could not write, from JetStream's advisories.

The consumer loop (`shared/jetstream/consume_loop.py`) dead-letters what it gives up on, before it terminates
the message. It cannot when its process died on the last delivery, or when `max_deliver` runs
out while no one of its kind is up: the server then stops delivering the message and says so
once, in an advisory on core NATS (`$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.<stream>.<durable>`),
and likewise for every terminated message (`...MSG_TERMINATED...`). The listener hears those
for the platform's durables, fetches the original by its stream sequence and dead-letters it
under the same `Nats-Msg-Id` a stage would have used, so a copy the stage wrote first wins.

What the server still has when an advisory arrives: a message that ran out of deliveries is
still in its stream (work queues too: nothing acked it); a terminated one is gone from a work
queue (`AMP_SIGNALS`, an older deployment's `AMP_RUNS`) — which is why the loop writes its dead
letter before the term — and still there on `AMP_EVENTS` and on the run records' stream
(`KV_AMP_RUN_RECORDS`, where runs are kept: limits), where the listener's copy is a duplicate
JetStream drops. Advisories are not stored: the listener must be up when they are sent, so it
runs in every router process (a queue group: one of them handles each advisory).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.errors import NotFoundError

from shared.contracts.subjects import Subjects
from shared.jetstream.deadletter import dead_letter
from shared.lifecycle import Lifecycle, unsubscribe
from shared.nats.request_guard import refusing_deliveries
from shared.observability.logs import get_logger

log = get_logger("aurora.advisories")

MAX_DELIVERIES = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES"
MSG_TERMINATED = "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED"
QUEUE = "aurora-dlq-advisories"
ATTEMPTS = 4  # over about 3.5 s


def watched_streams(subjects: Subjects) -> tuple[str, ...]:
    """The streams whose durables are the platform's: signals, events, the run records (where
    runs are kept) and AMP_RUNS (an older deployment's runs, drained after an upgrade)."""
    return (subjects.stream("SIGNALS"), subjects.stream("EVENTS"), "KV_" + subjects.stream("RUN_RECORDS"),
            subjects.stream("RUNS"))


def platform_stages(subjects: Subjects) -> dict[tuple[str, str], str]:
    """(stream, durable) → the stage that dead-letters for it: the same stage names the
    services give their consumer loops (a test checks the two agree)."""
    signals, events, records, runs = watched_streams(subjects)
    return {
        (signals, "event-bridge"): "event_bridge",
        (events, "router"): "router",
        (events, "gateway-chat-approvals"): "mcp_gateway",
        (events, "runner-resume"): "runner",
        (records, "runner"): "runner",
        (runs, "runner"): "runner",
    }


def advisory_subjects(subjects: Subjects) -> list[str]:
    """What the listener subscribes to: both advisories, for the watched streams only."""
    return [f"{kind}.{stream}.*" for kind in (MAX_DELIVERIES, MSG_TERMINATED) for stream in watched_streams(subjects)]


@dataclass(frozen=True, slots=True)
class Advisory:
    kind: str  # max_deliveries | terminated
    stream: str
    consumer: str
    sequence: int
    deliveries: int
    reason: str = ""  # a term's reason, where the server passes one on


def parse_advisory(subject: str, data: bytes) -> Advisory | None:
    """The advisory's facts, or None when it is not one of the two kinds or is unreadable."""
    if subject.startswith(MAX_DELIVERIES + "."):
        kind = "max_deliveries"
    elif subject.startswith(MSG_TERMINATED + "."):
        kind = "terminated"
    else:
        return None
    try:
        body: Any = json.loads(data)
        stream, consumer, sequence = body["stream"], body["consumer"], body["stream_seq"]
        deliveries = body.get("deliveries", 0)
    except (ValueError, KeyError, TypeError):
        return None
    if not (isinstance(stream, str) and isinstance(consumer, str) and isinstance(sequence, int)
            and isinstance(deliveries, int)):
        return None
    reason = body.get("reason")
    return Advisory(kind, stream, consumer, sequence, deliveries, reason if isinstance(reason, str) else "")


def advisory_reason(advisory: Advisory) -> str:
    if advisory.kind == "max_deliveries":
        return (f"delivered {advisory.deliveries} times (max_deliver) to {advisory.consumer} without being "
                "settled: its process died or timed out on the last delivery (dead-lettered from the advisory)")
    told = f": {advisory.reason}" if advisory.reason else ""
    return f"terminated by {advisory.consumer}{told} (dead-lettered from the advisory)"


@dataclass
class AdvisoryStats:
    heard: int = 0
    stored: int = 0  # dead letters this listener wrote
    duplicates: int = 0  # the stage had written it first
    gone: int = 0  # not in the stream any more (a work queue's term: the stage wrote it before)
    ignored: int = 0  # not a platform durable, or unreadable
    failed: int = 0


class AdvisoryListener(Lifecycle[None]):
    """Subscribes to the advisories; `stop()` unsubscribes. Never raises from a callback."""

    def __init__(self, nc: NATS, subjects: Subjects, *, stages: Mapping[tuple[str, str], str] | None = None) -> None:
        super().__init__("the dead-letter advisory listener")
        self._nc = nc
        self._js = nc.jetstream()
        self._subjects = subjects
        self._stages = dict(stages if stages is not None else platform_stages(subjects))
        self._lock = asyncio.Lock()  # one at a time: a storm of advisories must not flood the server
        self.stats = AdvisoryStats()

    async def _start(self, parts: AsyncExitStack) -> None:
        for subject in advisory_subjects(self._subjects):
            # nats-server's own advisories; a stream delivery is none
            sub = await self._nc.subscribe(subject, queue=QUEUE, cb=refusing_deliveries(subject, self._on_advisory))
            parts.push_async_callback(unsubscribe, sub)

    async def _on_advisory(self, msg: Msg) -> None:
        async with self._lock:
            # An advisory is sent once and not stored: a short outage of AMP_DLQ is waited out
            # here, a longer one leaves the message where it is (in its stream) and says so.
            for attempt in range(ATTEMPTS):
                try:
                    await self.handle(msg.subject, msg.data)
                    return
                except Exception as exc:
                    if attempt == ATTEMPTS - 1:
                        self.stats.failed += 1
                        log.warning("advisory not handled: the message stays in its stream", subject=msg.subject,
                                    error=str(exc))
                        return
                    await asyncio.sleep(0.5 * 2 ** attempt)

    async def handle(self, subject: str, data: bytes) -> str:
        """Dead-letter what the advisory names; returns what happened (for logs and tests)."""
        self.stats.heard += 1
        advisory = parse_advisory(subject, data)
        stage = None if advisory is None else self._stages.get((advisory.stream, advisory.consumer))
        if advisory is None or stage is None:
            self.stats.ignored += 1
            return "ignored"
        try:
            original = await self._js.get_msg(advisory.stream, advisory.sequence)
        except NotFoundError:
            self.stats.gone += 1
            log.info("advisory: message already gone", stream=advisory.stream, seq=advisory.sequence,
                     consumer=advisory.consumer, kind=advisory.kind)
            return "gone"
        headers = {k: v for k, v in (original.headers or {}).items()}
        stored = await dead_letter(
            self._js, self._subjects, stage=stage, data=original.data or b"", reason=advisory_reason(advisory),
            original_subject=original.subject or "", stream=advisory.stream, sequence=advisory.sequence,
            headers=headers, deliveries=advisory.deliveries or None, consumer=advisory.consumer, via="advisory",
        )
        outcome = "stored" if stored else "duplicate"
        if stored:
            self.stats.stored += 1
        else:
            self.stats.duplicates += 1
        log.info(f"advisory: dead letter {outcome}", stream=advisory.stream, seq=advisory.sequence,
                 consumer=advisory.consumer, kind=advisory.kind, stage=stage)
        return outcome
