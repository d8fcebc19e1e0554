"""The gateway's app sessions: one per enabled app, opened at start, closed at stop.

What a session's changes mean for the rest (catalog, health, signals, restarts) is the
listener's (`sessions/listener.py`); this module only composes the sessions with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Mapping

from nats.aio.client import Client as NATS

from services.mcp_gateway.pool.live_catalog import check_no_conflicts
from services.mcp_gateway.server_requests.callbacks import ServerRequests
from services.mcp_gateway.sessions.listener import SessionsListener, on_process_event
from services.mcp_gateway.sessions.session import AppSession, TransportFactory
from services.mcp_gateway.transports.nats_stdio import nats_stdio_transport, relaying_streak
from services.mcp_gateway.transports.streamable_http import http_transport
from shared.config.appconfig import AppConfig, AppsConfig
from shared.contracts.subjects import Subjects
from shared.lifecycle import Lifecycle, unsubscribe
from shared.nats.request_guard import refusing_deliveries


class AppSessions(Lifecycle[None]):
    """The app sessions; its lifecycle is `shared.lifecycle`'s."""

    def __init__(self, nc: NATS, subjects: Subjects, apps: AppsConfig, listener: SessionsListener,
                 requests: ServerRequests | None = None, *, env: Mapping[str, str]) -> None:
        super().__init__("the app sessions")
        self._env = env  # the variables the apps' `mcp.url` and `mcp.headers` reference
        self._nc = nc
        self._requests = requests
        self._subjects = subjects
        self._apps = apps
        self._listener = listener
        self.sessions: dict[tuple[str, str], AppSession] = {}

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        """Open every session and wait for each one's first attempt (bounded by its
        `health_timeout_seconds`); then the start-up catalog must have no conflicts (if it has,
        the sessions are closed again: each announces `closed`, so no supervisor waits for them)."""
        self.sessions.clear()
        for app in self._apps.enabled():
            callbacks = self._requests.for_session((app.app_id, app.instance), app.name) if self._requests else None
            session = AppSession(app, self._transport_for(app), self._listener, callbacks=callbacks)
            self.sessions[session.key] = session
            if app.is_stdio:
                proc = self._subjects.mcp(app.app_id, app.instance, "proc")
                handler = refusing_deliveries(proc, functools.partial(on_process_event, self.sessions))
                parts.push_async_callback(unsubscribe, await self._nc.subscribe(proc, cb=handler))
        closing = asyncio.Event()
        tasks = [asyncio.create_task(session.run(closing), name=f"session-{session.app.name}")
                 for session in self.sessions.values()]
        parts.push_async_callback(_close_sessions, closing, tasks)
        await asyncio.gather(*(s.first_attempt_done.wait() for s in self.sessions.values()))
        check_no_conflicts({self.sessions[k].app.name: tools for k, tools in self._listener.listed.items()})

    def _transport_for(self, app: AppConfig) -> TransportFactory:
        if app.mcp.transport == "streamable_http":
            assert app.mcp.url is not None
            url, headers = app.mcp.url, dict(app.mcp.headers)
            return lambda: http_transport(url, headers, self._env)
        relaying = relaying_streak(app.app_id, app.instance)  # across the app's sessions
        return lambda: nats_stdio_transport(self._nc, self._subjects, app.app_id, app.instance, relaying)


async def _close_sessions(closing: asyncio.Event, tasks: list[asyncio.Task[None]]) -> None:
    """Close every session (each announces `closed` to the supervisor), at most 15 s."""
    closing.set()
    if tasks:
        await asyncio.wait(tasks, timeout=15)
    for task in tasks:
        task.cancel()
