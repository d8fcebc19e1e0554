"""What a chaos scenario is and what it reports: one row of the `make chaos` table."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Outcome:
    """What one scenario measured.

    `acknowledged` counts the inputs the platform accepted (a JetStream ack on publish);
    `lost` those of them that never reached their end (no terminal task, or no reply where
    one was due); `duplicated` the side effects that happened more than once.
    `recover_s` is the time from the fault to the first work completed after it, or None
    when the scenario has no single fault instant. `logged`: per service, how often each
    message was logged at warning level or above (`tests.chaos.logged`).
    """

    scenario: str
    load: str
    faults: str
    acknowledged: int
    lost: int
    duplicated: int
    recover_s: float | None
    passed: bool
    detail: str = ""
    logged: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(frozen=True)
class Scenario:
    """A named run: `run(workdir, scale)` starts what it needs under `workdir`, injects its
    faults, stops everything it started and returns its outcome. `scale` is 1.0 for
    `make chaos`; the short versions in `make test` pass a smaller value."""

    name: str
    run: Callable[[Path, float], Awaitable[Outcome]]
