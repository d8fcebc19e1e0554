"""bench-legs' arithmetic: each leg is the time from the sighting before it (the send, for the
first), in the path's order; the legs after one not seen, or seen out of order, are left out."""

from __future__ import annotations

import pytest

from tests.bench.legs_e2e import leg_times

LEGS = (("event", "", "a"), ("run", "", "b"), ("call", "", "c"))


def test_each_leg_runs_from_the_sighting_before_it() -> None:
    times = leg_times(10.0, {"event": 10.001, "run": 10.0015, "call": 10.004}, LEGS)
    assert times == pytest.approx({"event": 1.0, "run": 0.5, "call": 2.5})


def test_a_leg_not_seen_or_seen_before_the_one_before_it_ends_the_list() -> None:
    assert leg_times(10.0, {"event": 10.001, "call": 10.004}, LEGS) == pytest.approx({"event": 1.0})
    # a run record seen before its event (the previous event's, come late): not this event's legs
    assert leg_times(10.0, {"event": 10.002, "run": 10.001, "call": 10.004}, LEGS) == pytest.approx({"event": 2.0})
