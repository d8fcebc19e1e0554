"""`amp.admin.schedules.*`: apply/get/delete (shared/resource_admin.py), and list, show,
trigger (trigger-now), pause and resume; `amp.admin.scheduler.health`.

Pause and resume change the resource's `enabled` (a compare-and-set on its revision), so a
paused schedule says so in `aurora get schedules`, and applying its file again with
`enabled: true` resumes it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from nats.js import JetStreamContext
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from services.scheduler.events import tick_signal
from services.scheduler.ticks import TickStats
from services.scheduler.timers import Timers
from shared.contracts.resource import ResourceError, canonical_json, parse_resource
from shared.contracts.schedule import Schedule
from shared.contracts.subjects import Subjects
from shared.jetstream.kvmirror import read_all
from shared.nats.admin_service import AdminHandler, AdminRequestError
from shared.nats.signal_publisher import publish_signal
from shared.schedule_times import iso

UPCOMING = 5


def cadence_text(schedule: Schedule) -> str:
    if schedule.every is not None:
        return f"every {schedule.every}"
    return f"cron {schedule.cron} ({schedule.timezone or 'UTC'})"


class ScheduleAdmin:
    def __init__(self, js: JetStreamContext, subjects: Subjects, kv: KeyValue, timers: Timers,
                 stats: TickStats, *, instance: str,
                 clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._js = js
        self._subjects = subjects
        self._kv = kv
        self._timers = timers
        self._stats = stats
        self._instance = instance
        self._clock = clock

    def endpoints(self) -> dict[str, AdminHandler]:
        return {"list": self.list, "show": self.show, "trigger": self.trigger, "pause": self.pause,
                "resume": self.resume}

    async def _all(self) -> list[Schedule]:
        found = []
        for value in (await read_all(self._kv)).values():
            try:
                found.append(parse_resource(Schedule, json.loads(value)))
            except (ResourceError, ValueError):
                continue  # applied only through validation; nothing else writes the bucket
        return sorted(found, key=lambda s: s.id)

    async def _one(self, body: dict[str, Any]) -> tuple[Schedule, int]:
        key = body.get("id")
        if not isinstance(key, str) or not key:
            raise AdminRequestError("invalid_request", 'send {"id": "<schedule id>"}')
        try:
            entry = await self._kv.get(key)
        except KeyNotFoundError as exc:
            raise AdminRequestError("not_found", f"no Schedule {key!r}") from exc
        return parse_resource(Schedule, json.loads(entry.value or b"{}")), entry.revision or 0

    async def _status(self, schedule: Schedule) -> dict[str, Any]:
        armed = await self._timers.armed(schedule.id)
        last = await self._timers.last_tick(schedule.id)
        return {"id": schedule.id, "cadence": cadence_text(schedule), "enabled": schedule.enabled,
                "catch_up": schedule.catch_up, "next_tick": iso(armed.tick) if armed else None,
                "last_tick": iso(last) if last else None}

    async def list(self, _: dict[str, Any]) -> dict[str, Any]:
        return {"items": [await self._status(s) for s in await self._all()]}

    async def show(self, body: dict[str, Any]) -> dict[str, Any]:
        schedule, revision = await self._one(body)
        upcoming = schedule.cadence().ticks_between(self._clock(), datetime.max.replace(tzinfo=UTC),
                                                    limit=UPCOMING)
        return {**await self._status(schedule), "revision": revision,
                "upcoming": [iso(t) for t in upcoming] if schedule.enabled else [],
                "document": schedule.model_dump(mode="json")}

    async def trigger(self, body: dict[str, Any]) -> dict[str, Any]:
        """One `schedule.triggered` now, besides the ticks (paused schedules too: it is asked for)."""
        schedule, _ = await self._one(body)
        signal = tick_signal(schedule, self._clock(), signal_id=str(uuid.uuid4()),
                             summary=f"schedule {schedule.id} triggered now by an operator")
        await publish_signal(self._js, self._subjects, signal)
        return {"id": schedule.id, "message_id": signal.signal_id, "timestamp": signal.observed_at}

    async def pause(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self._set_enabled(body, False)

    async def resume(self, body: dict[str, Any]) -> dict[str, Any]:
        return await self._set_enabled(body, True)

    async def _set_enabled(self, body: dict[str, Any], enabled: bool) -> dict[str, Any]:
        for _ in range(5):
            schedule, revision = await self._one(body)
            verb = "resumed" if enabled else "paused"
            if schedule.enabled == enabled:
                return {"id": schedule.id, "enabled": enabled, "result": "unchanged"}
            changed = schedule.model_copy(update={"enabled": enabled})
            try:
                await self._kv.update(schedule.id, canonical_json(changed), last=revision)
            except KeyWrongLastSequenceError:
                continue  # changed meanwhile: read it again
            return {"id": schedule.id, "enabled": enabled, "result": verb}
        raise AdminRequestError("conflict", f"Schedule {body.get('id')!r} keeps changing; try again")

    async def health(self, _: dict[str, Any]) -> dict[str, Any]:
        stats = self._stats
        return {"status": "ok", "instance": self._instance, "fired": stats.fired, "skipped": stats.skipped,
                "dropped": stats.dropped, "last_error": stats.last_error, "last_fired": dict(stats.last_fired)}
