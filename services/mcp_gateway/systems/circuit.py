"""A circuit breaker per system: pure state, the clock passed in, every state change returned.

closed ──N consecutive failures──▶ open ──cool-down passed──▶ half_open (one trial call)
   ▲                                 ▲                            │
   └──────────── success ────────────┼──────── failure ───────────┘
                                     └── (a failure while open restarts the cool-down)

Any success closes the circuit (a probe or a call that got through proves the system answers).
A half-open trial that never reports back stops blocking after another cool-down.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from shared.contracts.system import CircuitConfig

CircuitState = Literal["closed", "open", "half_open"]
Transition = tuple[CircuitState, CircuitState]


@dataclass(frozen=True, slots=True)
class Admission:
    """`allow`'s answer; truthy when the call may go ahead. `transition` is set when asking moved the
    circuit (open → half_open), so the caller can publish it."""

    allowed: bool
    transition: Transition | None = None

    def __bool__(self) -> bool:
        return self.allowed


@dataclass(frozen=True, slots=True)
class CircuitSnapshot:
    state: CircuitState
    failures: int
    opened_at: float | None
    failure_threshold: int
    cooldown_seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {"state": self.state, "failures": self.failures, "opened_at": self.opened_at,
                "failure_threshold": self.failure_threshold, "cooldown_seconds": self.cooldown_seconds}


class CircuitBreaker:
    def __init__(self, failure_threshold: int, cooldown_seconds: float) -> None:
        if failure_threshold < 1 or cooldown_seconds <= 0:
            raise ValueError("failure_threshold must be >= 1 and cooldown_seconds > 0")
        self.failure_threshold = failure_threshold
        self.cooldown_seconds = cooldown_seconds
        self._state: CircuitState = "closed"
        self._failures = 0
        self._opened_at: float | None = None
        self._trial_at: float | None = None  # when the half-open trial was let through

    @classmethod
    def from_config(cls, config: CircuitConfig) -> CircuitBreaker:
        return cls(config.failure_threshold, config.cooldown_seconds)

    @property
    def state(self) -> CircuitState:
        return self._state

    def allow(self, now: float) -> Admission:
        """May a call go out now? Closed: yes. Open: no until the cool-down passed, then the circuit
        half-opens and lets exactly one trial through until that trial is recorded."""
        transition: Transition | None = None
        if self._state == "open":
            if self._opened_at is not None and now - self._opened_at < self.cooldown_seconds:
                return Admission(False)
            transition = self._move("half_open")
            self._trial_at = None
        if self._state == "half_open":
            if self._trial_at is not None and now - self._trial_at < self.cooldown_seconds:
                return Admission(False, transition)
            self._trial_at = now
        return Admission(True, transition)

    def record_success(self, now: float) -> Transition | None:
        self._failures = 0
        self._opened_at = None
        self._trial_at = None
        return self._move("closed")

    def record_failure(self, now: float) -> Transition | None:
        self._failures += 1
        self._trial_at = None
        if self._state == "open":
            self._opened_at = now  # still failing: wait a full cool-down again
            return None
        if self._state == "half_open" or self._failures >= self.failure_threshold:
            self._opened_at = now
            return self._move("open")
        return None

    def snapshot(self) -> CircuitSnapshot:
        return CircuitSnapshot(self._state, self._failures, self._opened_at, self.failure_threshold,
                               self.cooldown_seconds)

    def _move(self, new: CircuitState) -> Transition | None:
        old, self._state = self._state, new
        return (old, new) if old != new else None
