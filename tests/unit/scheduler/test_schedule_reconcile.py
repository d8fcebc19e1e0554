"""What the reconciler does with a schedule's timer (services/scheduler/reconciler.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from services.scheduler.reconciler import wanted_timer
from services.scheduler.timers import Armed
from shared.contracts.resource import parse_resource
from shared.contracts.schedule import Schedule

NOW = datetime(2026, 6, 1, 12, 0, 0, 300_000, tzinfo=UTC)


def schedule(**fields: object) -> Schedule:
    return parse_resource(Schedule, {"kind": "Schedule", "id": "s", "every": "1m", **fields})


def test_an_enabled_schedule_without_a_timer_is_armed_for_its_next_tick() -> None:
    assert wanted_timer(schedule(), None, NOW) == datetime(2026, 6, 1, 12, 1, tzinfo=UTC)


def test_a_timer_on_the_next_tick_is_left_alone() -> None:
    armed = Armed("s", datetime(2026, 6, 1, 12, 1, tzinfo=UTC))
    assert wanted_timer(schedule(), armed, NOW) is False


def test_a_timer_about_to_fire_is_left_alone_even_if_the_cadence_changed() -> None:
    armed = Armed("s", NOW + timedelta(milliseconds=500))
    assert wanted_timer(schedule(every="1h"), armed, NOW) is False


def test_a_changed_cadence_rearms_the_timer() -> None:
    armed = Armed("s", datetime(2026, 6, 1, 12, 1, tzinfo=UTC))
    assert wanted_timer(schedule(every="1h"), armed, NOW) == datetime(2026, 6, 1, 13, tzinfo=UTC)


def test_a_paused_schedule_is_disarmed_once() -> None:
    armed = Armed("s", datetime(2026, 6, 1, 12, 1, tzinfo=UTC))
    assert wanted_timer(schedule(enabled=False), armed, NOW) is None
    assert wanted_timer(schedule(enabled=False), None, NOW) is False
