"""Orchestrates every app runner: start-up, status, restart on request, ordered shutdown.

Shutdown order (the seed's): no more restarts → per app, wait until the gateway closed its
session (bounded; no wait if no session was ever announced) → stop that app's process
(stdin closed, SIGTERM, SIGKILL after the grace period) → `stopped` and the final health.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

from nats.aio.client import Client as NATS

from services.app_supervisor.backoff import Clock, RestartTracker
from services.app_supervisor.config_check import LaunchSpec
from services.app_supervisor.keeper import AppKeeper
from services.app_supervisor.process import AppProcess
from services.app_supervisor.relay.receipts import Receipts
from services.app_supervisor.relay.stdio import StdioRelay
from services.app_supervisor.reporter import Reporter
from services.app_supervisor.sessions import SessionBook
from shared.config.appconfig import AppConfig
from shared.contracts.health import ProcessHealth
from shared.contracts.subjects import Subjects
from shared.lifecycle import Lifecycle
from shared.observability.logs import get_logger

log = get_logger("aurora.app_supervisor")


@dataclass(frozen=True)
class SupervisorOptions:
    shutdown_wait_seconds: float = 10.0  # how long to wait for the gateway to close a session
    stop_grace_seconds: float = 5.0  # SIGTERM → SIGKILL
    restart_timeout_seconds: float = 30.0  # a requested restart must have started by then


@dataclass(frozen=True)
class SupervisedApp:
    config: AppConfig
    spec: LaunchSpec


class UnknownApp(LookupError):
    """No supervised app has this id and instance."""


class Supervisor(Lifecycle[None]):
    """`start()`, then `status()` / `restart()`, then `stop()` (`shared.lifecycle`): apps are
    stopped in the seed's order, each once its gateway session closed (bounded), as `sessions`
    (the `SessionWatch`'s book, running until the apps are stopped) says."""

    def __init__(self, nc: NATS, subjects: Subjects, apps: Sequence[SupervisedApp], reporter: Reporter,
                 sessions: SessionBook, options: SupervisorOptions | None = None, *,
                 clock: Clock = time.monotonic) -> None:
        super().__init__("the app supervisor")
        self._nc = nc
        self._subjects = subjects
        self._options = options or SupervisorOptions()
        self._sessions = sessions
        self._runners = [
            AppKeeper(app.spec, RestartTracker(app.config.restart, clock), reporter, self._new_process,
                      command=list(app.config.mcp.command or []))
            for app in apps
        ]
        # Per app instance, across its generations: an event one generation wrote and no
        # gateway confirmed yet is sent again by the next.
        self._receipts: dict[tuple[str, str], Receipts] = {}

    def _new_process(self, spec: LaunchSpec, generation: int) -> AppProcess:
        receipts = self._receipts.setdefault((spec.app_id, spec.instance), Receipts())
        relay_for = partial(StdioRelay, self._nc, self._subjects, spec, generation, receipts=receipts)
        return AppProcess(spec, generation, relay_for, grace=self._options.stop_grace_seconds)

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        parts.push_async_callback(self._stop_apps)
        for runner in self._runners:
            await runner.start()
        log.info("supervising apps", apps=[r.spec.name for r in self._runners])

    def status(self) -> list[ProcessHealth]:
        return [runner.health() for runner in self._runners]

    def runner(self, app: str, instance: str) -> AppKeeper:
        for runner in self._runners:
            if instance == runner.spec.instance and app in (runner.spec.app_id, runner.spec.name):
                return runner
        raise UnknownApp(f"no supervised stdio app {app!r} with instance {instance!r}")

    async def restart(self, app: str, instance: str, reason: str) -> int:
        """Restart one app's process now; returns the new generation."""
        runner = self.runner(app, instance)
        log.info("restart requested", app=runner.spec.name, instance=instance, reason=reason)
        return await runner.restart(reason, self._options.restart_timeout_seconds)

    async def _stop_apps(self) -> None:
        """Stop every app in the seed's order."""
        for runner in self._runners:
            runner.drain()
        await asyncio.gather(*(self._stop_after_session(r) for r in self._runners))
        log.info("all apps stopped")

    async def _stop_after_session(self, runner: AppKeeper) -> None:
        key = (runner.spec.app_id, runner.spec.instance)
        book = self._sessions
        if book.must_wait(key):
            wait = self._options.shutdown_wait_seconds
            log.info("waiting for the gateway to close the session", app=runner.spec.name,
                     instance=runner.spec.instance, timeout_seconds=wait)
            if await book.wait_closed(key, wait):
                log.info("session closed, stopping app", app=runner.spec.name)
            else:
                log.warning("session still open after the bounded wait, stopping app anyway",
                            app=runner.spec.name, waited_seconds=wait)
        await runner.stop()
