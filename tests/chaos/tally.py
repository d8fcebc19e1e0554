"""Counting a load run: what was sent, acknowledged, lost, duplicated, and how fast work resumed.

Pure functions over what the load driver recorded (every input it sent, with the gateway's
answer), what AMP_EVENTS holds (the inputs the platform acknowledged: the bridge's JetStream
publish succeeded), the tasks and the chat app's append-only log of replies.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Sent:
    """One input the driver asked the chat app to emit: `n`, when, and the call's status
    (`ok`, or why the platform did not take it: `unavailable`, `no_gateway`, …)."""

    n: int
    at: float
    status: str


@dataclass(frozen=True)
class Reply:
    """A reply the chat app sent to input `n`'s conversation, at wall-clock time `at`."""

    n: int
    at: float


@dataclass(frozen=True)
class Tally:
    sent: int
    refused: Mapping[str, int]  # status -> how many inputs the platform did not take
    acknowledged: int
    unstored: int  # emitted by the app (call ok) but never stored as an event
    lost: int  # acknowledged, and no reply ever came
    duplicated: int  # replies beyond the first to the same input
    unfinished: int  # acknowledged inputs whose task is not terminal (or missing)
    states: Mapping[str, int]
    recover_s: float | None
    latency_p50_s: float | None
    lost_inputs: tuple[int, ...] = field(default=())
    resumed: int = 0  # tasks a runner took up again (their attempt count > 1): after a crash, a nak
    reasons: Mapping[str, int] = field(default_factory=dict)  # "state:error code" of tasks not succeeded

    def summary(self) -> str:
        refused = ", ".join(f"{k} {v}" for k, v in sorted(self.refused.items())) or "none"
        states = ", ".join(f"{k} {v}" for k, v in sorted(self.states.items())) or "none"
        lost = f"; lost inputs {list(self.lost_inputs[:8])}" if self.lost_inputs else ""
        why = f"; not succeeded: {dict(self.reasons)}" if self.reasons else ""
        return (f"sent {self.sent}, refused: {refused}; emitted but not stored {self.unstored}; "
                f"unfinished {self.unfinished}; tasks: {states} ({self.resumed} taken up again by a runner){why}{lost}")


def count(sent: Iterable[Sent], stored: Iterable[int], states: Mapping[int, str], replies: Iterable[Reply],
          *, fault_at: float | None, resumed: int = 0, reasons: Mapping[str, int] | None = None) -> Tally:
    """`stored`: the input numbers found in AMP_EVENTS (once per stored event); `states`: the
    task state of each stored input that has a task; `fault_at`: when the fault was injected."""
    inputs = {s.n: s for s in sent}
    acknowledged = set(stored)
    per_input = Counter(r.n for r in replies)
    lost = tuple(sorted(n for n in acknowledged if per_input[n] == 0))
    return Tally(
        sent=len(inputs),
        refused=dict(Counter(s.status for s in inputs.values() if s.status != "ok")),
        acknowledged=len(acknowledged),
        unstored=sum(1 for s in inputs.values() if s.status == "ok" and s.n not in acknowledged),
        lost=len(lost),
        duplicated=sum(c - 1 for c in per_input.values() if c > 1),
        unfinished=sum(1 for n in acknowledged if states.get(n) not in TERMINAL),
        states=dict(Counter(states.values())),
        recover_s=recovery(inputs, replies, fault_at),
        latency_p50_s=median_latency(inputs, replies),
        lost_inputs=lost,
        resumed=resumed,
        reasons=dict(reasons or {}),
    )


TERMINAL = frozenset({"succeeded", "failed", "unverified", "partial", "cancelled"})


def recovery(inputs: Mapping[int, Sent], replies: Iterable[Reply], fault_at: float | None) -> float | None:
    """Seconds from the fault to the first reply to an input sent after it: end-to-end work
    done again (a reply to older, in-flight work does not show that the platform recovered)."""
    if fault_at is None:
        return None
    after = [r.at for r in replies if r.n in inputs and inputs[r.n].at >= fault_at]
    return round(min(after) - fault_at, 2) if after else None


def median_latency(inputs: Mapping[int, Sent], replies: Iterable[Reply], *, since: float | None = None,
                   until: float | None = None) -> float | None:
    """Median seconds from sending an input to its first reply, over the inputs sent in
    [since, until)."""
    first: dict[int, float] = {}
    for r in replies:
        first[r.n] = min(first.get(r.n, r.at), r.at)
    spans = [first[n] - s.at for n, s in inputs.items() if n in first
             and (since is None or s.at >= since) and (until is None or s.at < until)]
    return round(statistics.median(spans), 3) if spans else None
