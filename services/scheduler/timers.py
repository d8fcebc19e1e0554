"""Each schedule's next tick, kept as a one-shot JetStream timer, and the ticks the timers fire.

A timer is a message on `<prefix>.sched.timer.<id>` with `Nats-Schedule: @at <UTC time>`:
the server holds it and, at that time, publishes its body to `<prefix>.sched.tick.<id>` in
the same stream (nats-server 2.12+, ADR-51), where the schedulers' shared durable takes it.
`Nats-Rollup: sub` keeps one timer per schedule: arming again replaces the timer, and a
message without `Nats-Schedule` (a tombstone) disarms it. Because the server keeps the timer
and the tick, a tick is fired even while no scheduler runs, and waits for one to come back.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import msgspec
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from shared.contracts.schedule import TimerBody
from shared.contracts.subjects import Subjects
from shared.errors import AuroraError
from shared.schedule_times import iso, parse_iso

SCHEDULE = "Nats-Schedule"
MIN_SERVER = (2, 12)  # JetStream message schedules (`Nats-Schedule: @at …`)


class TimersUnsupported(AuroraError):
    """The NATS server is too old for JetStream message schedules."""


def check_server(nc: NATS) -> None:
    """`TimersUnsupported` unless the connected server keeps timers (2.12 or newer)."""
    version = nc.connected_server_version
    if (version.major, version.minor) < MIN_SERVER:
        raise TimersUnsupported(
            f"nats-server {version} has no JetStream message schedules; the scheduler needs "
            f"{MIN_SERVER[0]}.{MIN_SERVER[1]} or newer")


_decode = msgspec.json.Decoder(TimerBody).decode


def decode_tick(data: bytes) -> tuple[str, datetime]:
    """(schedule id, tick time) of a tick; msgspec/ValueError if it is not one."""
    body = _decode(data)
    return body.schedule, parse_iso(body.tick)


@dataclass(frozen=True)
class Armed:
    schedule: str
    tick: datetime


class Timers:
    def __init__(self, js: JetStreamContext, subjects: Subjects, stream: str, *, tick_ttl_seconds: int) -> None:
        self._js = js
        self._subjects = subjects
        self._stream = stream
        self._ttl = f"{tick_ttl_seconds}s"

    async def arm(self, schedule_id: str, tick: datetime) -> None:
        """The timer of `schedule_id` goes off at `tick` (replacing any it had)."""
        body = msgspec.json.encode(TimerBody(schedule=schedule_id, tick=iso(tick)))
        headers = {
            SCHEDULE: f"@at {iso(tick)}",
            "Nats-Schedule-Target": self._subjects.schedule_tick(schedule_id),
            "Nats-Schedule-TTL": self._ttl,
            "Nats-Rollup": "sub",
        }
        await self._js.publish(self._subjects.schedule_timer(schedule_id), body, headers=headers,
                               stream=self._stream)

    async def disarm(self, schedule_id: str) -> None:
        """No timer for `schedule_id` (a tombstone replaces the one it had)."""
        await self._js.publish(self._subjects.schedule_timer(schedule_id), b"",
                               headers={"Nats-Rollup": "sub"}, stream=self._stream)

    async def armed(self, schedule_id: str) -> Armed | None:
        """The timer `schedule_id` has now, or None (never armed, disarmed, or gone off)."""
        try:
            msg = await self._js.get_last_msg(self._stream, self._subjects.schedule_timer(schedule_id), direct=True)
        except NotFoundError:
            return None
        if not msg.headers or SCHEDULE not in msg.headers or not msg.data:
            return None
        try:
            schedule, tick = decode_tick(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
            return None
        return Armed(schedule, tick)

    async def last_tick(self, schedule_id: str) -> datetime | None:
        """The time of the last tick a timer of `schedule_id` fired (kept for the tick TTL)."""
        try:
            msg = await self._js.get_last_msg(self._stream, self._subjects.schedule_tick(schedule_id), direct=True)
        except NotFoundError:
            return None
        try:
            return decode_tick(msg.data or b"")[1]
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
            return None
