"""Schedules (`kind: Schedule`): a `schedule.triggered` event on a cron or an interval.

```yaml
kind: Schedule
id: nightly-report
cron: "30 2 * * *"          # or 6 fields with seconds first, or @daily …
timezone: Europe/Berlin     # IANA name; cron only; UTC when left out
# every: 15m                # instead of cron: an interval (30s, 5m, 1h30m, 1d)
data: {report: daily}       # the event's data
enabled: true
catch_up: false             # a tick missed while no scheduler ran: fire it late (true) or skip it
```

The event (published by the scheduler through the bridge) has actor `{id: aurora.scheduler,
kind: system}`, subject `{kind: schedule, id: <id>}` and exactly this `data`; its timestamp is
the tick's. When ticks happen is `shared/schedule_times.py`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from pydantic import Field, field_validator, model_validator

from shared.contracts.resource import ResourceId, ResourceModel
from shared.schedule_times import Cadence, parse_every, six_fields, zone

EVENT_TYPE = "schedule.triggered"
SUBJECT_KIND = "schedule"


class Schedule(ResourceModel):
    """A saved schedule (`kind: Schedule`)."""

    kind: Literal["Schedule"] = "Schedule"
    id: ResourceId
    cron: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    timezone: Annotated[str, Field(min_length=1, max_length=64)] | None = None
    every: Annotated[str, Field(min_length=1, max_length=32)] | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    enabled: bool = True
    catch_up: bool = False
    description: Annotated[str, Field(max_length=2000)] = ""

    @field_validator("cron")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        if value is not None:
            six_fields(value)  # raises, naming what is wrong
        return value

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, value: str | None) -> str | None:
        if value is not None:
            zone(value)
        return value

    @field_validator("every")
    @classmethod
    def _every(cls, value: str | None) -> str | None:
        if value is not None:
            parse_every(value)
        return value

    @model_validator(mode="after")
    def _one_cadence(self) -> Schedule:
        if (self.cron is None) == (self.every is None):
            raise ValueError("a schedule has either cron (with an optional timezone) or every, exactly one")
        if self.timezone is not None and self.cron is None:
            raise ValueError("timezone applies to cron only; an every interval is the same in every zone")
        return self

    def cadence(self) -> Cadence:
        if self.every is not None:
            return Cadence(every_seconds=parse_every(self.every))
        assert self.cron is not None
        return Cadence(cron=six_fields(self.cron), zone=self.timezone or "UTC")


class TimerBody(msgspec.Struct, frozen=True, kw_only=True):
    """What a schedule's timer carries (`<prefix>.sched.timer.<id>`), and so what the tick the
    server fires from it carries (`<prefix>.sched.tick.<id>`): whose tick, and which one."""

    schedule: str
    tick: str  # UTC, milliseconds, `Z` (shared/schedule_times.iso)
