"""Pure restart policy: exponential backoff, and giving up on a crash loop.

A crash loop is more than `max_restarts` restarts within `window_seconds`. The delay before a
restart doubles with each restart still inside the window (initial, ×2, … capped at
`backoff_max_seconds`), so an app that ran quietly for a whole window starts again from the
initial delay. Time comes from the clock passed in (monotonic seconds).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from shared.config.appconfig import RestartPolicy

Clock = Callable[[], float]


@dataclass(frozen=True)
class Restart:
    """Restart after `delay` seconds; this will be restart number `attempt` in the window."""

    delay: float
    attempt: int


@dataclass(frozen=True)
class GiveUp:
    """Stop restarting: `restarts` restarts already happened within `window` seconds."""

    restarts: int
    window: float

    @property
    def reason(self) -> str:
        return (f"crash loop: crashed again after {self.restarts} restart(s) within "
                f"{self.window:g} s")


class RestartTracker:
    """Decides, after each crash, whether and when to restart."""

    def __init__(self, policy: RestartPolicy, clock: Clock) -> None:
        self._policy = policy
        self._clock = clock
        self._restarts: deque[float] = deque()

    def _recent(self) -> int:
        horizon = self._clock() - self._policy.window_seconds
        while self._restarts and self._restarts[0] <= horizon:
            self._restarts.popleft()
        return len(self._restarts)

    def on_crash(self) -> Restart | GiveUp:
        """The app crashed: restart it (recorded now) or give up."""
        recent = self._recent()
        if recent >= self._policy.max_restarts:
            return GiveUp(restarts=recent, window=self._policy.window_seconds)
        self._restarts.append(self._clock())
        return Restart(delay=self.delay_for(recent), attempt=recent + 1)

    def delay_for(self, previous_restarts: int) -> float:
        policy = self._policy
        delay = policy.backoff_initial_seconds * (2.0 ** min(previous_restarts, 62))
        return min(delay, policy.backoff_max_seconds)

    def reset(self) -> None:
        """Forget past crashes (an operator asked for a restart after giving up)."""
        self._restarts.clear()
