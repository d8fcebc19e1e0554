"""A tool call on one connection attempt, and what its failures mean to the caller: through the
SDK session, or (a stdio app's relay) written by the gateway itself beside the SDK session that
does everything else (see docs/services/mcp-gateway.md for why)."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable
from typing import Any, cast

import mcp_types as types
from mcp import ClientSession
from mcp.shared.exceptions import MCPError

from services.mcp_gateway.calls.classify import PlainResult, plain_result
from services.mcp_gateway.server_requests import input_required
from services.mcp_gateway.server_requests.callbacks import SessionCallbacks
from services.mcp_gateway.sessions.errors import CallInterrupted, CallTimedOut, SessionUnavailable
from services.mcp_gateway.sessions.waits import Attempt, Lost, NotSent, race
from services.mcp_gateway.transports import generations
from services.mcp_gateway.transports.direct import ConnectionLost, DirectCalls, NotDelivered, result_of


async def call_tool(attempt: Attempt, app: str, tool: str, arguments: dict[str, Any], timeout: float,
                    meta: dict[str, Any] | None, callbacks: SessionCallbacks | None,
                    ) -> types.CallToolResult | PlainResult:
    """`tool` called on `attempt`'s session (which must be set); a failure is a SessionUnavailable
    (nothing ran), a CallInterrupted (it may have run) or a CallTimedOut."""
    session = attempt.session
    assert session is not None
    try:
        if attempt.direct is not None:
            return await call_directly(attempt, session, attempt.direct, tool, arguments, timeout, meta)
        work: Awaitable[types.CallToolResult]
        if generations.is_stateless(session):  # what the app asks comes in the result
            work = input_required.call_tool(session, tool, arguments, timeout=timeout, meta=meta,
                                            answer=_answer(callbacks, meta))
        else:  # what the app asks comes as requests to the callbacks
            work = session.call_tool(tool, arguments, read_timeout_seconds=timeout,
                                     meta=cast("types.RequestParamsMeta | None", meta))
        return await race(work, attempt.lost, timeout + 1.0)
    except NotSent as exc:
        raise SessionUnavailable(f"app {app!r} closed the connection before the call") from exc
    except NotDelivered as exc:  # nothing ran: the call may be sent again once the relay is heard
        raise SessionUnavailable(f"app {app!r} was not reached: {exc}") from exc
    except Lost as exc:
        raise CallInterrupted(f"app {app!r} went away during the call: {attempt.reason}") from exc
    except ConnectionLost as exc:
        raise CallInterrupted(f"app {app!r} closed the connection: {exc}") from exc
    except TimeoutError as exc:
        raise CallTimedOut(f"no answer within {timeout:g}s") from exc
    except MCPError as exc:
        if exc.code == types.REQUEST_TIMEOUT:
            raise CallTimedOut(f"no answer within {timeout:g}s") from exc
        if exc.code == types.CONNECTION_CLOSED or attempt.lost.is_set():
            raise CallInterrupted(f"app {app!r} closed the connection: {exc.message}") from exc
        raise


async def read_resource(attempt: Attempt, app: str, uri: str, timeout: float) -> types.ReadResourceResult:
    session = attempt.session
    assert session is not None
    try:
        result = await race(session.read_resource(uri), attempt.lost, timeout)
    except Lost as exc:
        raise SessionUnavailable(f"app {app!r} went away: {attempt.reason}") from exc
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


def _answer(callbacks: SessionCallbacks | None, meta: dict[str, Any] | None) -> input_required.Answer:
    """What answers a stateless app's questions during the call whose `_meta` is `meta`."""
    token = (meta or {}).get("progressToken")

    async def answer(request: types.InputRequest) -> types.InputResponse | types.ErrorData:
        if callbacks is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message="this gateway answers no app requests")
        return await callbacks.input_request(token if isinstance(token, str) else None, request)
    return answer


async def call_directly(
    attempt: Attempt,
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
        raise NotSent from exc  # the relay closed before the call went out: nothing ran
    # The answer is awaited on its own: a timer and the attempt's end fail it instead, so the call
    # wakes once when its answer comes (`asyncio.wait` on both took two more turns of the loop).
    lost = attempt.lost_future
    ended = functools.partial(_give_up, answer, Lost)
    timer = asyncio.get_running_loop().call_later(timeout, _give_up, answer, TimeoutError)
    lost.add_done_callback(ended)
    try:
        response = await answer
    except Lost:
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
