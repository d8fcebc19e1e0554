"""How a service creates what it needs on JetStream, from its settings (replicas, and whose its
short-lived consumers are): a plain value the settings make and the JetStream helpers take."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StreamPlan:
    """How a service creates what it needs on JetStream, from its settings: on how many servers
    each stream, bucket, object store and watch consumer lives (AURORA_STREAM_REPLICAS), and whose
    its short-lived consumers are (its NATS user, in their names so permissions can scope them)."""

    replicas: int = 1
    owner: str = "aurora"  # no NATS users (`make dev` without `--secure`)

    def __post_init__(self) -> None:
        if not 1 <= self.replicas <= 5:
            raise ValueError(f"JetStream replicas must be from 1 to 5, not {self.replicas}")

    @classmethod
    def of(cls, replicas: int, user: str | None) -> StreamPlan:
        return cls(replicas, "".join(c if c.isalnum() or c in "-_" else "_" for c in user or "aurora"))


DEFAULT_PLAN = StreamPlan()  # one server, no NATS users: what a test or tool gets unless it says
