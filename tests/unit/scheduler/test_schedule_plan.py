"""What one tick does (services/scheduler/plan.py): on time it fires; missed ticks are caught up
or skipped per `catch_up`; the next timer is the first tick after now."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from services.scheduler.plan import plan_tick
from shared.schedule_times import Cadence

T0 = datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC)
EVERY_2S = Cadence(every_seconds=2)


def seconds(*offsets: int) -> tuple[datetime, ...]:
    return tuple(T0 + timedelta(seconds=s) for s in offsets)


def test_a_tick_handled_on_time_fires_alone() -> None:
    plan = plan_tick(EVERY_2S, catch_up=False, tick=T0, now=T0 + timedelta(milliseconds=30), grace_seconds=5,
                     max_catch_up=10)
    assert plan.fire == (T0,) and plan.skipped == () and plan.next_tick == T0 + timedelta(seconds=2)


def test_a_late_tick_within_grace_fires_with_the_ticks_due_since() -> None:
    # a scheduler died holding T0; another got it 3 s later (the ack wait): nothing was missed
    plan = plan_tick(EVERY_2S, catch_up=False, tick=T0, now=T0 + timedelta(seconds=3), grace_seconds=5,
                     max_catch_up=10)
    assert plan.fire == seconds(0, 2) and plan.skipped == ()
    assert plan.next_tick == T0 + timedelta(seconds=4)


def test_missed_ticks_are_caught_up_with_catch_up() -> None:
    plan = plan_tick(EVERY_2S, catch_up=True, tick=T0, now=T0 + timedelta(seconds=11), grace_seconds=5,
                     max_catch_up=10)
    assert plan.fire == seconds(0, 2, 4, 6, 8, 10) and plan.skipped == ()
    assert plan.next_tick == T0 + timedelta(seconds=12)


def test_missed_ticks_are_skipped_without_catch_up_but_recent_ones_fire() -> None:
    plan = plan_tick(EVERY_2S, catch_up=False, tick=T0, now=T0 + timedelta(seconds=11), grace_seconds=5,
                     max_catch_up=10)
    assert plan.skipped == seconds(0, 2, 4) and plan.fire == seconds(6, 8, 10)


def test_catching_up_fires_at_most_the_newest_max_catch_up() -> None:
    plan = plan_tick(EVERY_2S, catch_up=True, tick=T0, now=T0 + timedelta(seconds=11), grace_seconds=1,
                     max_catch_up=2)
    assert plan.skipped == seconds(0, 2, 4) and plan.fire == seconds(6, 8, 10)  # 10 is on time
