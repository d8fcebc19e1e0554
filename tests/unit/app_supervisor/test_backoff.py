"""The restart policy: exponential backoff capped, give up after a crash loop, a quiet window resets."""

from __future__ import annotations

from services.app_supervisor.backoff import GiveUp, Restart, RestartTracker
from shared.config.appconfig import RestartPolicy
from tests.harness.clock import ManualClock as FakeClock


def tracker(**policy: float) -> tuple[RestartTracker, FakeClock]:
    clock = FakeClock()
    settings = {"backoff_initial_seconds": 0.5, "backoff_max_seconds": 3.0, "max_restarts": 5,
                "window_seconds": 60.0, **policy}
    return RestartTracker(RestartPolicy.model_validate(settings), clock), clock


def test_delays_double_and_are_capped() -> None:
    restarts, _ = tracker()
    decisions = [restarts.on_crash() for _ in range(5)]
    assert decisions == [Restart(0.5, 1), Restart(1.0, 2), Restart(2.0, 3), Restart(3.0, 4), Restart(3.0, 5)]


def test_more_than_max_restarts_within_the_window_gives_up() -> None:
    restarts, clock = tracker(max_restarts=2, window_seconds=10)
    assert isinstance(restarts.on_crash(), Restart)
    clock.now += 1
    assert isinstance(restarts.on_crash(), Restart)
    clock.now += 1
    decision = restarts.on_crash()
    assert decision == GiveUp(restarts=2, window=10)
    assert "crash loop" in decision.reason and "2 restart(s) within 10 s" in decision.reason


def test_max_restarts_zero_gives_up_at_the_first_crash() -> None:
    restarts, _ = tracker(max_restarts=0)
    assert isinstance(restarts.on_crash(), GiveUp)


def test_restarts_older_than_the_window_are_forgotten() -> None:
    restarts, clock = tracker(max_restarts=2, window_seconds=10)
    restarts.on_crash()
    restarts.on_crash()
    clock.now += 10.5  # a quiet window: the app ran long enough
    assert restarts.on_crash() == Restart(0.5, 1)  # and the backoff starts over


def test_reset_forgets_everything() -> None:
    restarts, _ = tracker(max_restarts=1)
    restarts.on_crash()
    assert isinstance(restarts.on_crash(), GiveUp)
    restarts.reset()
    assert restarts.on_crash() == Restart(0.5, 1)


def test_a_huge_number_of_restarts_does_not_overflow() -> None:
    restarts, _ = tracker()
    assert restarts.delay_for(10_000) == 3.0
