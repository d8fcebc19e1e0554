"""The gateway's app sessions: one per enabled app, opened at start, closed at stop.

What a session's changes mean for the rest (catalog, health, signals, restarts) is the
listener's (`sessions_listener.py`); this module only composes the sessions with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools

from nats.aio.client import Client as NATS
from nats.aio.subscription import Subscription

from services.mcp_gateway.catalog import CatalogConflict, check_no_conflicts
from services.mcp_gateway.server_requests import ServerRequests
from services.mcp_gateway.session import AppSession, TransportFactory
from services.mcp_gateway.sessions_listener import SessionsListener, on_process_event
from services.mcp_gateway.transports.http import http_transport
from services.mcp_gateway.transports.nats_stdio import nats_stdio_transport, relaying_streak
from shared.appconfig import AppConfig, AppsConfig
from shared.request_guard import refusing_deliveries
from shared.subjects import Subjects


class Gateway:
    def __init__(self, nc: NATS, subjects: Subjects, apps: AppsConfig, listener: SessionsListener,
                 requests: ServerRequests | None = None) -> None:
        self._nc = nc
        self._requests = requests
        self._subjects = subjects
        self._apps = apps
        self._listener = listener
        self.sessions: dict[tuple[str, str], AppSession] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._subs: list[Subscription] = []
        self._stop = asyncio.Event()

    async def start(self) -> None:
        """Open every session and wait for each one's first attempt (bounded by its
        `health_timeout_seconds`); then the start-up catalog must have no conflicts."""
        for app in self._apps.enabled():
            callbacks = self._requests.for_session((app.app_id, app.instance), app.name) if self._requests else None
            session = AppSession(app, self._transport_for(app), self._listener, callbacks=callbacks)
            self.sessions[session.key] = session
            if app.is_stdio:
                proc = self._subjects.mcp(app.app_id, app.instance, "proc")
                handler = refusing_deliveries(proc, functools.partial(on_process_event, self.sessions))
                self._subs.append(await self._nc.subscribe(proc, cb=handler))
        for session in self.sessions.values():
            self._tasks.append(asyncio.create_task(session.run(self._stop), name=f"session-{session.app.name}"))
        await asyncio.gather(*(s.first_attempt_done.wait() for s in self.sessions.values()))
        try:
            check_no_conflicts({self.sessions[k].app.name: tools for k, tools in self._listener.listed.items()})
        except CatalogConflict:
            await self.stop()  # announce `closed`: no supervisor should wait for these sessions
            raise

    async def stop(self) -> None:
        """Close every session (each announces `closed` to the supervisor)."""
        self._stop.set()
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=15)
        for task in self._tasks:
            task.cancel()

    def _transport_for(self, app: AppConfig) -> TransportFactory:
        if app.mcp.transport == "streamable_http":
            assert app.mcp.url is not None
            url, headers = app.mcp.url, dict(app.mcp.headers)
            return lambda: http_transport(url, headers)
        relaying = relaying_streak(app.app_id, app.instance)  # across the app's sessions
        return lambda: nats_stdio_transport(self._nc, self._subjects, app.app_id, app.instance, relaying)
