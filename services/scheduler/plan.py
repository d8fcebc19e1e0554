"""What to do with one tick: which ticks fire, which are skipped, when the next timer goes off.

Pure: the tick handler (ticks.py) reads the clock and the schedule and does what this says.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from shared.schedule_times import Cadence


@dataclass(frozen=True)
class TickPlan:
    fire: tuple[datetime, ...]  # publish one event for each, in order
    skipped: tuple[datetime, ...]  # missed and not caught up (or beyond `max_catch_up`)
    next_tick: datetime  # arm the timer for this one


def plan_tick(cadence: Cadence, *, catch_up: bool, tick: datetime, now: datetime, grace_seconds: float,
              max_catch_up: int) -> TickPlan:
    """`tick` fired (its timer went off) and is handled at `now`.

    Since only the next tick is ever armed, the ticks after `tick` that are already due were
    missed while no scheduler handled `tick`; they and `tick` are *candidates*. A candidate
    at most `grace_seconds` old is on time and fires; an older one was missed: it fires with
    `catch_up`, else it is skipped. Catching up fires at most `max_catch_up` (the newest);
    the next timer is the first tick after `now`.
    """
    candidates = [tick, *cadence.ticks_between(tick, now, limit=100_000)]
    on_time = [t for t in candidates if (now - t).total_seconds() <= grace_seconds]
    missed = [t for t in candidates if (now - t).total_seconds() > grace_seconds]
    if catch_up:
        kept = missed[-max_catch_up:] if max_catch_up < len(missed) else missed
        fire = [*kept, *on_time]
        skipped = missed[: len(missed) - len(kept)]
    else:
        fire, skipped = on_time, missed
    return TickPlan(fire=tuple(fire), skipped=tuple(skipped), next_tick=cadence.next_after(now))
