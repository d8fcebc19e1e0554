"""One MCP client session per app instance, kept alive across app restarts and outages.

The session task owns the transport and the SDK `ClientSession` (their async contexts must be
entered and left in one task); tool calls come from other tasks and race the connection's
`lost` event, so a call in flight when its app dies returns at once instead of at its timeout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol

import mcp_types as types
from mcp import ClientSession

from services.mcp_gateway.calls.classify import PlainResult
from services.mcp_gateway.server_requests.callbacks import SessionCallbacks
from services.mcp_gateway.sessions import calls
from services.mcp_gateway.sessions.errors import CallTimedOut, InitializeFailed, SessionUnavailable
from services.mcp_gateway.sessions.initialize_failures import initialize_failure
from services.mcp_gateway.sessions.waits import Attempt, Changes, Lost, race, sole_cause, wait_any
from services.mcp_gateway.transports import generations
from services.mcp_gateway.transports.direct import SupportsDirectCalls
from services.mcp_gateway.transports.streams import TransportStreams
from services.mcp_gateway.transports.tap import tapped
from shared.config.appconfig import AppConfig
from shared.contracts.health import SessionStatus
from shared.lifecycle import cancel_task
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway.session")

CLIENT_INFO = types.Implementation(name="aurora-mcp-gateway", version="0.1.0")
TransportFactory = Callable[[], AbstractAsyncContextManager[TransportStreams]]


class SessionListener(Protocol):
    async def session_state(self, session: AppSession, status: SessionStatus, reason: str | None) -> None: ...

    async def tools_listed(self, session: AppSession, tools: list[types.Tool]) -> None: ...

    async def notification(self, session: AppSession, method: str, params: dict[str, Any] | None,
                           receipt: str | None = None) -> None: ...

    async def initialize_refused(self, session: AppSession, reason: str) -> None: ...

    async def app_hung(self, session: AppSession, reason: str) -> None: ...

    async def session_problem(self, session: AppSession) -> None:
        """The session is up, but something about the app is wrong (`session.problem` says what)."""


class AppSession:
    def __init__(
        self,
        app: AppConfig,
        transport: TransportFactory,
        listener: SessionListener,
        *,
        retry_initial: float = 1.0,
        retry_max: float = 30.0,
        callbacks: SessionCallbacks | None = None,
    ) -> None:
        self.app = app
        # What the app asks back during a call (elicitation, sampling) and its progress: see server_requests.
        self._callbacks = callbacks
        self._transport = transport
        self._listener = listener
        self._retry_initial = retry_initial
        self._retry_max = retry_max
        self.status: SessionStatus = "connecting"
        self.last_error: str | None = None
        # While connected: what is wrong with the app all the same (calls timing out, lines on
        # its stdout that are not JSON-RPC); shown as the session's last error.
        self.problem: str | None = None
        self._unreadable = 0
        self.server_info: types.Implementation | None = None
        self.protocol_version: str | None = None  # the MCP revision the last connection agreed on
        self.first_attempt_done = asyncio.Event()
        self._wake = asyncio.Event()
        self._attempt: Attempt | None = None
        self._generation = 0
        self._status_changes = Changes()  # what `ready_within` waits on
        self._refresh: asyncio.Task[None] | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.app.app_id, self.app.instance)

    @property
    def connected(self) -> bool:
        return self.status == "connected" and self._attempt is not None and self._attempt.live

    # -- signals from the supervisor -------------------------------------------------------
    def process_exited(self, reason: str) -> None:
        if self._attempt is not None:
            self._attempt.lose(reason)

    def process_started(self, generation: int) -> None:
        if generation <= self._generation:
            return
        self._generation = generation
        if self._attempt is not None:
            self._attempt.lose("the app process was restarted")
        self._wake.set()

    # -- the session task ------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        delay = self._retry_initial
        while not stop.is_set():
            self._wake.clear()
            attempt = Attempt()
            self._attempt = attempt
            served = False
            try:
                served = await self._connect_and_serve(attempt, stop)
            except Exception as raised:  # a transport failure must not end the session task
                exc = sole_cause(raised)
                if isinstance(exc, InitializeFailed):
                    # No process got it: still connecting (no `app.init_failed`; the supervisor
                    # reports its processes' lifecycle itself).
                    await self._set_status("connecting" if exc.undelivered else "unavailable", str(exc))
                    if exc.refused:
                        await self._listener.initialize_refused(self, str(exc))
                else:
                    await self._set_status("unavailable", f"{type(exc).__name__}: {exc}")
            finally:
                self._attempt = None
                self.first_attempt_done.set()
            if stop.is_set():
                break
            if served:
                delay = self._retry_initial
                await self._set_status("disconnected", attempt.reason or "connection lost")
            await wait_any(stop.wait(), self._wake.wait(), timeout=delay)
            delay = self._retry_initial if self._wake.is_set() else min(delay * 2, self._retry_max)
        await self._set_status("closed", "gateway stopped")

    async def _connect_and_serve(self, attempt: Attempt, stop: asyncio.Event) -> bool:
        async def on_notification(method: str, params: dict[str, Any] | None, receipt: str | None) -> None:
            if method == "notifications/tools/list_changed":
                self._schedule_refresh()
            if self._callbacks is not None:
                self._callbacks.notified(method, params)
            await self._listener.notification(self, method, params, receipt)

        timeout = self.app.mcp.health_timeout_seconds
        transport = self._transport()
        async with (
            tapped(transport, on_notification, on_closed=lambda: attempt.lose("connection closed"),
                   on_unreadable=self._unreadable_output) as (
                read,
                write,
            ),
            ClientSession(read, write, client_info=CLIENT_INFO,
                          elicitation_callback=self._callbacks.elicitation if self._callbacks else None,
                          sampling_callback=self._callbacks.sampling if self._callbacks else None) as session,
        ):
            try:
                tools = await race(self._handshake(session), attempt.lost, timeout)
            except Exception as exc:
                failure = initialize_failure(exc, transport, attempt.reason, timeout)
                if failure is None:
                    raise
                raise failure from exc
            self.server_info = session.server_info
            attempt.direct = transport.direct if isinstance(transport, SupportsDirectCalls) else None
            if attempt.direct is not None and self._callbacks is not None:
                attempt.direct.progressed = self._callbacks.progressed
            attempt.session = session
            try:
                self.problem, self._unreadable = None, 0  # a new session: nothing wrong with it yet
                await self._listener.tools_listed(self, tools)
                await self._set_status("connected", None)
                self.first_attempt_done.set()
                await wait_any(stop.wait(), attempt.lost.wait(), self._keep_alive(session, attempt),
                                self._follow_changes(session, attempt))
            finally:
                attempt.session = None
                # A listing still running on this connection ends before the connection is closed
                # (however the attempt ended, a cancelled session task included), never after it.
                if self._refresh is not None:
                    await cancel_task(self._refresh)
        return True

    async def _keep_alive(self, session: ClientSession, attempt: Attempt) -> None:
        """Ping the app every `ping_interval_seconds`: one that does not answer within
        `health_timeout_seconds` is hung (its process may still run), so the attempt is lost and
        the session made again — calls fail fast meanwhile instead of each waiting its timeout."""
        interval, timeout = self.app.mcp.ping_interval_seconds, self.app.mcp.health_timeout_seconds
        if interval <= 0:
            await asyncio.Event().wait()  # never: the other waits end the session
        while not attempt.lost.is_set():
            await asyncio.sleep(interval)
            try:
                await race(generations.probe(session), attempt.lost, timeout)
            except Lost:
                return
            except TimeoutError:
                reason = f"the app did not answer a ping within {timeout:g}s"
                attempt.lose(reason)
                await self._listener.app_hung(self, reason)
                return
            except Exception as exc:
                attempt.lose(f"the ping failed: {type(exc).__name__}: {exc}")
                return

    async def _handshake(self, session: ClientSession) -> list[types.Tool]:
        protocol = "handshake" if self.app.is_stdio else self.app.mcp.protocol
        self.protocol_version = await generations.negotiate(session, protocol)
        return await calls.list_all_tools(session)

    async def _follow_changes(self, session: ClientSession, attempt: Attempt) -> None:
        """A stateless app sends list changes only on a stream the gateway holds open; when that
        stream ends, what changed meanwhile is unknown, so the session is made again (and lists
        again). A handshake app sends them unasked: nothing to hold."""
        if generations.is_stateless(session):
            try:
                await generations.follow_changes(session, self.app.mcp.health_timeout_seconds)
            except generations.ListenRefused as exc:
                await self._note_problem(str(exc))
            except generations.StreamEnded as exc:
                attempt.lose(str(exc))
                return
        await asyncio.Event().wait()  # never: the other waits end the session

    def _schedule_refresh(self) -> None:
        # Never await a request from the transport's read path: the answer arrives on that path.
        if self._refresh is None or self._refresh.done():
            self._refresh = asyncio.create_task(self._refresh_tools(), name=f"refresh-tools-{self.app.name}")

    async def _refresh_tools(self) -> None:
        attempt = self._attempt
        if attempt is None or attempt.session is None:
            return
        try:
            tools = await calls.list_all_tools(attempt.session)
        except Exception as exc:
            log.warning("tool refresh failed", app=self.app.name, error=str(exc))
            return
        await self._listener.tools_listed(self, tools)

    async def _unreadable_output(self, error: Exception) -> None:
        self._unreadable += 1
        first_line = " ".join(str(error).split())[:160]
        if self._unreadable == 1 or self._unreadable % 1000 == 0:
            log.warning("app wrote output that is not JSON-RPC; skipped", app=self.app.name,
                        lines=self._unreadable, error=first_line)
        await self._note_problem(f"{self._unreadable} line(s) on its stdout were not JSON-RPC and were "
                                 f"skipped; the last: {first_line}", force=self._unreadable == 1)

    async def _note_problem(self, problem: str | None, *, force: bool = True) -> None:
        """Record what is wrong with a connected app; its health is written when that changes
        (`force=False`: only the count changed, which is not worth a write each time)."""
        if problem == self.problem:
            return
        changed = force or (problem is None) != (self.problem is None)
        self.problem = problem
        if changed:
            await self._listener.session_problem(self)

    async def _set_status(self, status: SessionStatus, reason: str | None) -> None:
        changed = status != self.status or reason != self.last_error
        self.status = status
        if reason is not None:
            self.last_error = reason
        if changed:
            log.info("session state", app=self.app.name, status=status, reason=reason)
            await self._listener.session_state(self, status, reason)
        await self._status_changes.changed()

    async def ready_within(self, timeout: float) -> bool:
        """Whether the session is connected now or comes to be within `timeout` seconds."""
        return await self._status_changes.holds_within(lambda: self.connected, timeout)

    # -- calls from other tasks ------------------------------------------------------------
    async def call_tool(self, tool: str, arguments: dict[str, Any], timeout: float,
                        meta: dict[str, Any] | None = None) -> types.CallToolResult | PlainResult:
        """`meta`: the request's `_meta` (the idempotency key, see `IDEMPOTENCY_META_KEY`)."""
        attempt = self._attempt
        if attempt is None or attempt.session is None:
            raise SessionUnavailable(
                f"app {self.app.name!r} is {self.status}" + (f": {self.last_error}" if self.last_error else "")
            )
        try:
            result = await calls.call_tool(attempt, self.app.name, tool, arguments, timeout, meta, self._callbacks)
        except CallTimedOut:
            await self._note_problem(f"tools/call {tool}: no answer within {timeout:g}s")
            raise
        if self.problem is not None and self.problem.startswith("tools/call "):
            await self._note_problem(None)  # it answers again
        return result

    async def read_resource(self, uri: str, timeout: float) -> types.ReadResourceResult:
        attempt = self._attempt
        if attempt is None or attempt.session is None:
            raise SessionUnavailable(f"app {self.app.name!r} is {self.status}")
        return await calls.read_resource(attempt, self.app.name, uri, timeout)
