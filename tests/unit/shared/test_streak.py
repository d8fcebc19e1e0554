"""A repeated operation's failures said as a streak: when it begins, now and then while it lasts,
and when it ends."""

from __future__ import annotations

import logging

import pytest

from shared.observability.logs import get_logger
from shared.streak import FailureStreak
from tests.harness.clock import ManualClock


def test_a_streak_is_said_when_it_begins_every_so_often_and_when_it_ends(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="aurora.test")
    clock = ManualClock(100.0)
    streak = FailureStreak(get_logger("aurora.test"), "fetch", every=10, clock=clock, consumer="runs")
    streak.worked()  # nothing failed: nothing to say
    for _ in range(25):  # a failure every half second for 12.5 s
        streak.failed(ConnectionError("no responders"))
        clock.now += 0.5
    streak.worked()
    streak.worked()  # said once
    streak.failed(TimeoutError())  # a new streak

    said = [(r.levelname, r.getMessage(), r.__dict__["fields"]) for r in caplog.records]
    assert said == [
        ("WARNING", "fetch failed", {"error": "ConnectionError: no responders", "consumer": "runs"}),
        ("WARNING", "fetch still failing",
         {"failures": 21, "seconds": 10.0, "error": "ConnectionError: no responders", "consumer": "runs"}),
        ("INFO", "fetch works again", {"failures": 25, "seconds": 12.5, "consumer": "runs"}),
        ("WARNING", "fetch failed", {"error": "TimeoutError", "consumer": "runs"}),
    ]


def test_an_error_that_names_its_type_is_not_prefixed_twice(caplog: pytest.LogCaptureFixture) -> None:
    class ServiceUnavailableError(Exception):
        def __str__(self) -> str:
            return "nats: ServiceUnavailableError: code=503"

    caplog.set_level(logging.INFO, logger="aurora.test")
    FailureStreak(get_logger("aurora.test"), "heartbeat").failed(ServiceUnavailableError())
    assert caplog.records[0].__dict__["fields"]["error"] == "nats: ServiceUnavailableError: code=503"


def test_a_quiet_start_leaves_the_beginning_to_the_caller(caplog: pytest.LogCaptureFixture) -> None:
    """A lost connection's own warning says the outage began; its failed reconnects are counted,
    and said only once it lasts."""
    caplog.set_level(logging.INFO, logger="aurora.test")
    clock = ManualClock(0.0)
    streak = FailureStreak(get_logger("aurora.test"), "nats reconnect", every=10, clock=clock, quiet_start=True)
    for _ in range(8):  # an attempt every 1.5 s: the last at 10.5 s
        streak.failed(ConnectionRefusedError("refused"))
        clock.now += 1.5
    assert [(r.getMessage(), r.__dict__["fields"]["failures"]) for r in caplog.records] == [
        ("nats reconnect still failing", 8)]
    assert streak.failures == 8
