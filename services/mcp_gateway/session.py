"""One MCP client session per app instance, kept alive across app restarts and outages.

The session task owns the transport and the SDK `ClientSession` (their async contexts must be
entered and left in one task); tool calls come from other tasks and race the connection's
`lost` event, so a call in flight when its app dies returns at once instead of at its timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar, cast

import mcp_types as types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from services.mcp_gateway import input_required
from services.mcp_gateway.classify import PlainResult, plain_result
from services.mcp_gateway.server_requests import SessionCallbacks
from services.mcp_gateway.transports import generations
from services.mcp_gateway.transports.direct import (
    ConnectionLost,
    DirectCalls,
    NotDelivered,
    SupportsDirectCalls,
    result_of,
)
from services.mcp_gateway.transports.http import ReportsHttpErrors
from services.mcp_gateway.transports.streams import TransportStreams
from services.mcp_gateway.transports.tap import tapped
from shared.appconfig import AppConfig
from shared.contracts.health import SessionStatus
from shared.errors import AuroraError
from shared.logs import get_logger

log = get_logger("aurora.mcp_gateway.session")

CLIENT_INFO = types.Implementation(name="aurora-mcp-gateway", version="0.1.0")
T = TypeVar("T")
TransportFactory = Callable[[], AbstractAsyncContextManager[TransportStreams]]


class SessionUnavailable(AuroraError):
    """The app has no live session (not connected, restarting, or it died during the call)."""


class CallInterrupted(SessionUnavailable):
    """The app went away after the call was sent to it: it may or may not have run."""


class CallTimedOut(AuroraError):
    """The app did not answer within the call's timeout."""


class InitializeFailed(AuroraError):
    def __init__(self, reason: str, *, refused: bool = False) -> None:
        super().__init__(reason)
        self.refused = refused


class SessionListener(Protocol):
    async def session_state(self, session: AppSession, status: SessionStatus, reason: str | None) -> None: ...

    async def tools_listed(self, session: AppSession, tools: list[types.Tool]) -> None: ...

    async def notification(self, session: AppSession, method: str, params: dict[str, Any] | None,
                           receipt: str | None = None) -> None: ...

    async def initialize_refused(self, session: AppSession, reason: str) -> None: ...

    async def app_hung(self, session: AppSession, reason: str) -> None: ...

    async def session_problem(self, session: AppSession) -> None:
        """The session is up, but something about the app is wrong (`session.problem` says what)."""


@dataclass
class _Attempt:
    """One connection attempt; `lost` ends it (process exited or restarted, transport closed)."""

    lost: asyncio.Event = field(default_factory=asyncio.Event)
    # `lost` as a future too: a call can wait on it beside its answer without a task of its own.
    lost_future: asyncio.Future[None] = field(default_factory=lambda: asyncio.get_running_loop().create_future())
    reason: str | None = None
    session: ClientSession | None = None
    direct: DirectCalls | None = None  # tool calls the gateway writes itself (stdio apps over NATS)

    def lose(self, reason: str) -> None:
        if not self.lost.is_set():
            self.reason = reason
            self.lost.set()
            self.lost_future.set_result(None)


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
        self._attempt: _Attempt | None = None
        self._generation = 0
        self._refresh: asyncio.Task[None] | None = None

    @property
    def key(self) -> tuple[str, str]:
        return (self.app.app_id, self.app.instance)

    @property
    def connected(self) -> bool:
        return self.status == "connected" and self._attempt is not None and self._attempt.session is not None

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
            attempt = _Attempt()
            self._attempt = attempt
            served = False
            try:
                served = await self._connect_and_serve(attempt, stop)
            except Exception as raised:  # a transport failure must not end the session task
                exc = _sole_cause(raised)
                if isinstance(exc, InitializeFailed):
                    await self._set_status("unavailable", str(exc))
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
            await _wait_any(stop.wait(), self._wake.wait(), timeout=delay)
            delay = self._retry_initial if self._wake.is_set() else min(delay * 2, self._retry_max)
        await self._set_status("closed", "gateway stopped")

    async def _connect_and_serve(self, attempt: _Attempt, stop: asyncio.Event) -> bool:
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
                tools = await _race(self._handshake(session), attempt.lost, timeout)
            except TimeoutError as exc:
                raise InitializeFailed(f"initialize did not finish within {timeout:g}s") from exc
            except _Lost as exc:
                raise InitializeFailed(f"initialize interrupted: {attempt.reason}") from exc
            except generations.NegotiationFailed as exc:
                http = transport.last_http_error if isinstance(transport, ReportsHttpErrors) else None
                raise InitializeFailed(f"{exc}: {http}" if http else str(exc)) from exc
            except MCPError as exc:
                http = transport.last_http_error if isinstance(transport, ReportsHttpErrors) else None
                detail = f": {http}" if http else ""
                raise InitializeFailed(f"initialize refused: {exc.message} (code {exc.code}){detail}",
                                       refused=http is None) from exc
            self.server_info = session.server_info
            attempt.direct = transport.direct if isinstance(transport, SupportsDirectCalls) else None
            if attempt.direct is not None and self._callbacks is not None:
                attempt.direct.progressed = self._callbacks.progressed
            attempt.session = session
            self.problem, self._unreadable = None, 0  # a new session: nothing wrong with it yet
            await self._listener.tools_listed(self, tools)
            await self._set_status("connected", None)
            self.first_attempt_done.set()
            await _wait_any(stop.wait(), attempt.lost.wait(), self._keep_alive(session, attempt),
                            self._follow_changes(session, attempt))
            attempt.session = None
            if self._refresh is not None:
                self._refresh.cancel()
        return True

    async def _keep_alive(self, session: ClientSession, attempt: _Attempt) -> None:
        """Ping the app every `ping_interval_seconds`: one that does not answer within
        `health_timeout_seconds` is hung (its process may still run), so the attempt is lost and
        the session made again — calls fail fast meanwhile instead of each waiting its timeout."""
        interval, timeout = self.app.mcp.ping_interval_seconds, self.app.mcp.health_timeout_seconds
        if interval <= 0:
            await asyncio.Event().wait()  # never: the other waits end the session
        while not attempt.lost.is_set():
            await asyncio.sleep(interval)
            try:
                await _race(generations.probe(session), attempt.lost, timeout)
            except _Lost:
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
        return await list_all_tools(session)

    async def _follow_changes(self, session: ClientSession, attempt: _Attempt) -> None:
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
            tools = await list_all_tools(attempt.session)
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
            result: types.CallToolResult | PlainResult
            if attempt.direct is not None:
                result = await _call_directly(attempt, attempt.session, attempt.direct, tool, arguments, timeout, meta)
            else:
                work: Awaitable[types.CallToolResult]
                if generations.is_stateless(attempt.session):  # what the app asks comes in the result
                    work = input_required.call_tool(attempt.session, tool, arguments, timeout=timeout, meta=meta,
                                                    answer=self._answer(meta))
                else:  # what the app asks comes as requests to the callbacks
                    work = attempt.session.call_tool(tool, arguments, read_timeout_seconds=timeout,
                                                     meta=cast("types.RequestParamsMeta | None", meta))
                result = await _race(work, attempt.lost, timeout + 1.0)
        except _NotSent as exc:
            raise SessionUnavailable(f"app {self.app.name!r} closed the connection before the call") from exc
        except NotDelivered as exc:  # nothing ran: the call may be sent again once the relay is heard
            raise SessionUnavailable(f"app {self.app.name!r} was not reached: {exc}") from exc
        except _Lost as exc:
            raise CallInterrupted(f"app {self.app.name!r} went away during the call: {attempt.reason}") from exc
        except ConnectionLost as exc:
            raise CallInterrupted(f"app {self.app.name!r} closed the connection: {exc}") from exc
        except TimeoutError as exc:
            await self._note_problem(f"tools/call {tool}: no answer within {timeout:g}s")
            raise CallTimedOut(f"no answer within {timeout:g}s") from exc
        except MCPError as exc:
            if exc.code == types.REQUEST_TIMEOUT:
                await self._note_problem(f"tools/call {tool}: no answer within {timeout:g}s")
                raise CallTimedOut(f"no answer within {timeout:g}s") from exc
            if exc.code == types.CONNECTION_CLOSED or attempt.lost.is_set():
                raise CallInterrupted(f"app {self.app.name!r} closed the connection: {exc.message}") from exc
            raise
        if self.problem is not None and self.problem.startswith("tools/call "):
            await self._note_problem(None)  # it answers again
        return result

    def _answer(self, meta: dict[str, Any] | None) -> input_required.Answer:
        """What answers a stateless app's questions during the call whose `_meta` is `meta`."""
        token = (meta or {}).get("progressToken")
        callbacks = self._callbacks

        async def answer(request: types.InputRequest) -> types.InputResponse | types.ErrorData:
            if callbacks is None:
                return types.ErrorData(code=types.INVALID_REQUEST, message="this gateway answers no app requests")
            return await callbacks.input_request(token if isinstance(token, str) else None, request)
        return answer

    async def read_resource(self, uri: str, timeout: float) -> types.ReadResourceResult:
        attempt = self._attempt
        if attempt is None or attempt.session is None:
            raise SessionUnavailable(f"app {self.app.name!r} is {self.status}")
        try:
            result = await _race(attempt.session.read_resource(uri), attempt.lost, timeout)
        except _Lost as exc:
            raise SessionUnavailable(f"app {self.app.name!r} went away: {attempt.reason}") from exc
        except TimeoutError as exc:
            raise CallTimedOut(f"no answer within {timeout:g}s") from exc
        assert isinstance(result, types.ReadResourceResult)
        return result


async def list_all_tools(session: ClientSession) -> list[types.Tool]:
    tools: list[types.Tool] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


async def _call_directly(
    attempt: _Attempt,
    session: ClientSession,
    direct: DirectCalls,
    tool: str,
    arguments: dict[str, Any],
    timeout: float,
    meta: dict[str, Any] | None = None,
) -> types.CallToolResult | PlainResult:
    """`tools/call` written on the relay by the gateway itself; the same outcomes as the SDK's
    `call_tool` (an error response raises MCPError, the output schema is checked by the SDK)."""
    try:
        params: dict[str, Any] = {"name": tool, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        request_id, answer = await direct.send("tools/call", params)
    except ConnectionLost as exc:
        raise _NotSent from exc  # the relay closed before the call went out: nothing ran
    # The answer is awaited on its own: a timer and the attempt's end fail it instead, so the call
    # wakes once when its answer comes (`asyncio.wait` on both took two more turns of the loop).
    lost = attempt.lost_future
    ended = functools.partial(_give_up, answer, _Lost)
    timer = asyncio.get_running_loop().call_later(timeout, _give_up, answer, TimeoutError)
    lost.add_done_callback(ended)
    try:
        response = await answer
    except _Lost:
        await direct.abandon(request_id, "the app went away")
        raise
    except TimeoutError:
        await direct.abandon(request_id, "no answer in time")
        raise
    except asyncio.CancelledError:
        await direct.abandon(request_id, "the call was cancelled")
        raise
    finally:
        timer.cancel()
        lost.remove_done_callback(ended)
    if response.error is not None:
        error = response.error
        raise MCPError(int(error.get("code", types.INTERNAL_ERROR)), str(error.get("message", "")), error.get("data"))
    raw = result_of(response)
    plain = plain_result(raw) if _has_no_output_schema(session, tool) else None
    if plain is not None:
        return plain
    result = types.CallToolResult.model_validate(raw, by_name=False)
    if not result.is_error:
        await session.validate_tool_result(tool, result)
    return result


def _has_no_output_schema(session: ClientSession, tool: str) -> bool:
    """Whether the SDK listed `tool` without an output schema: then its `validate_tool_result`
    checks nothing, and a plain result (`classify.plain_result`) needs none of its models. (Read
    from the SDK's cache of the listing; a tool it has not listed, or an SDK that keeps it
    elsewhere, is checked by the SDK as before.)"""
    schemas = getattr(session, "_tool_output_schemas", None)
    return isinstance(schemas, dict) and tool in schemas and schemas[tool] is None


def _give_up(answer: asyncio.Future[Any], error: type[Exception], *_: object) -> None:
    if not answer.done():
        answer.set_exception(error())


class _Lost(Exception):
    pass


class _NotSent(Exception):
    pass


def _sole_cause(exc: Exception) -> BaseException:
    """The transport's and the SDK's task groups wrap what the session raised in exception
    groups; a group of one is that one exception (its reason is what health must show)."""
    cause: BaseException = exc
    while isinstance(cause, BaseExceptionGroup) and len(cause.exceptions) == 1:
        cause = cause.exceptions[0]
    return cause


async def _race(work: Awaitable[T], lost: asyncio.Event, timeout: float) -> T:
    """`work`'s result, unless `lost` is set first (`_Lost`) or `timeout` passes (TimeoutError)."""
    task = asyncio.ensure_future(work)
    waiter = asyncio.ensure_future(lost.wait())
    try:
        done, _ = await asyncio.wait({task, waiter}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        waiter.cancel()
    if task in done:
        return task.result()
    task.cancel()
    with contextlib.suppress(BaseException):
        await task
    if lost.is_set():
        raise _Lost
    raise TimeoutError


async def _wait_any(*waits: Awaitable[Any], timeout: float | None = None) -> None:
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
