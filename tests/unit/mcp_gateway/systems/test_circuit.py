"""The circuit breaker's state machine with a fake clock (plain numbers)."""

from __future__ import annotations

import pytest

from services.mcp_gateway.systems.circuit import CircuitBreaker
from shared.contracts.system import CircuitConfig


def test_opens_after_n_consecutive_failures_only() -> None:
    breaker = CircuitBreaker(failure_threshold=3, cooldown_seconds=10)
    assert breaker.record_failure(1.0) is None
    assert breaker.record_failure(2.0) is None
    assert breaker.record_success(3.0) is None  # resets the count, no state change
    assert breaker.record_failure(4.0) is None
    assert breaker.record_failure(5.0) is None
    assert breaker.allow(5.5)
    assert breaker.record_failure(6.0) == ("closed", "open")
    assert breaker.snapshot().as_dict() == {"state": "open", "failures": 3, "opened_at": 6.0,
                                            "failure_threshold": 3, "cooldown_seconds": 10}


def test_open_refuses_until_the_cooldown_then_lets_one_trial_through() -> None:
    breaker = CircuitBreaker(failure_threshold=1, cooldown_seconds=10)
    breaker.record_failure(100.0)
    refused = breaker.allow(109.9)
    assert not refused and refused.transition is None
    trial = breaker.allow(110.0)
    assert trial and trial.transition == ("open", "half_open")
    assert breaker.state == "half_open"
    second = breaker.allow(110.5)
    assert not second and second.transition is None  # only one trial at a time
    assert breaker.record_success(111.0) == ("half_open", "closed")
    assert breaker.allow(111.1) and breaker.allow(111.2)
    assert breaker.snapshot().failures == 0 and breaker.snapshot().opened_at is None


def test_a_failed_trial_opens_again_for_a_full_cooldown() -> None:
    breaker = CircuitBreaker(failure_threshold=2, cooldown_seconds=5)
    breaker.record_failure(0.0)
    breaker.record_failure(1.0)
    assert breaker.allow(6.0).transition == ("open", "half_open")
    assert breaker.record_failure(6.5) == ("half_open", "open")
    assert not breaker.allow(11.0)
    assert breaker.allow(11.5).transition == ("open", "half_open")


def test_failures_while_open_restart_the_cooldown_and_a_success_closes() -> None:
    breaker = CircuitBreaker(failure_threshold=1, cooldown_seconds=5)
    breaker.record_failure(0.0)
    assert breaker.record_failure(4.0) is None  # e.g. a probe: still dead
    assert not breaker.allow(6.0)
    assert breaker.record_success(7.0) == ("open", "closed")  # e.g. a probe: it answers again
    assert breaker.state == "closed"


def test_a_lost_trial_stops_blocking_after_another_cooldown() -> None:
    breaker = CircuitBreaker(failure_threshold=1, cooldown_seconds=5)
    breaker.record_failure(0.0)
    assert breaker.allow(5.0)
    assert not breaker.allow(9.9)
    again = breaker.allow(10.0)
    assert again and again.transition is None and breaker.state == "half_open"


def test_from_config_and_bad_settings() -> None:
    breaker = CircuitBreaker.from_config(CircuitConfig(failure_threshold=4, cooldown_seconds=2.5))
    assert (breaker.failure_threshold, breaker.cooldown_seconds) == (4, 2.5)
    with pytest.raises(ValueError):
        CircuitBreaker(0, 1)
    with pytest.raises(ValueError):
        CircuitBreaker(1, 0)
