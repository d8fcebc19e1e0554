"""The `schedule.triggered` signal of one tick (the bridge makes it the event), and its id.

A tick's signal id is derived from (schedule, tick time): however often a tick is handled —
redelivered after a crash, fired by two timers, caught up twice — JetStream keeps one signal
and the bridge one event (both de-duplicate by this id). `trigger-now` uses a fresh id.
"""

from __future__ import annotations

import uuid
from datetime import datetime

from shared.contracts.envelope import Actor
from shared.contracts.schedule import EVENT_TYPE, SUBJECT_KIND, Schedule
from shared.contracts.signals import SCHEDULER_APP, PlatformEventSignal
from shared.ids import uuid5_text
from shared.schedule_times import iso

_TICK_IDS = uuid.UUID("6c0f3a52-8f1e-4c57-9a43-5d2f0b7c9e11")
ACTOR = Actor(id=SCHEDULER_APP, kind="system")


def tick_signal_id(prefix: str, schedule_id: str, tick: datetime) -> str:
    return uuid5_text(_TICK_IDS, f"{prefix}/{schedule_id}/{iso(tick)}")


def tick_signal(schedule: Schedule, tick: datetime, *, signal_id: str, summary: str) -> PlatformEventSignal:
    return PlatformEventSignal(
        signal_id=signal_id, app=SCHEDULER_APP, observed_at=iso(tick), type=EVENT_TYPE, summary=summary,
        data=dict(schedule.data), subject_kind=SUBJECT_KIND, subject_id=schedule.id, actor=ACTOR,
    )
