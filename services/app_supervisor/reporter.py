"""Announcing a process change everywhere it is needed, in a fixed order:

1. `ProcessEvent` on `…proc` (core NATS) — first, so the gateway fails calls in flight at once
   on `exited` and re-initializes on `started`;
2. the `ProcessHealth` record in the apps KV bucket;
3. a `LifecycleSignal` on `amp.sig.<app>.lifecycle` for the event-bridge (JetStream, once-only
   by signal id).

A failure of one step is logged and does not skip the others.
"""

from __future__ import annotations

from typing import Any, Protocol

from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError
from nats.js.errors import Error as JetStreamError

from services.app_supervisor.health import HealthStore
from shared.clock import now_iso
from shared.contracts.health import ProcessHealth
from shared.contracts.mcp_relay import ProcessEvent, encode
from shared.contracts.signals import LifecycleSignal, LifecycleState
from shared.contracts.subjects import Subjects
from shared.nats.signal_publisher import new_signal_id, publish_signal
from shared.observability.logs import get_logger

log = get_logger("aurora.app_supervisor")


class Reporter(Protocol):
    async def report(self, event: ProcessEvent, health: ProcessHealth,
                     signal: LifecycleState | None, detail: dict[str, Any]) -> None: ...


class NatsReporter:
    """The real reporter: core NATS, KV and the signal stream."""

    def __init__(self, nc: NATS, subjects: Subjects, health: HealthStore) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self._subjects = subjects
        self._health = health

    async def report(self, event: ProcessEvent, health: ProcessHealth,
                     signal: LifecycleState | None, detail: dict[str, Any]) -> None:
        log.info("app process " + event.state, app=health.name, instance=event.instance,
                 generation=event.generation, pid=event.pid, exit_code=event.exit_code,
                 reason=event.reason)
        try:
            await self._nc.publish(self._subjects.mcp(event.app, event.instance, "proc"), encode(event))
        except NatsError as exc:
            log.error("process event not published", app=health.name, state=event.state,
                      error=str(exc))
        await self._health.put(health)
        if signal is None:
            return
        lifecycle = LifecycleSignal(
            signal_id=new_signal_id(), app=event.app, instance=event.instance,
            observed_at=now_iso(), state=signal, reason=event.reason, exit_code=event.exit_code,
            detail={"generation": event.generation, "pid": event.pid, **detail},
        )
        try:
            await publish_signal(self._js, self._subjects, lifecycle)
        except (NatsError, JetStreamError, TimeoutError) as exc:
            log.error("lifecycle signal not published", app=health.name, state=signal,
                      error=str(exc))
