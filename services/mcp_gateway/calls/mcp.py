"""The MCP executor: a call sent to an app's session, and what came back, classified.

Whom the call is for goes with it (`CallsInFlight`): an app asking back during the call (a form,
a model sample) finds its caller by it; the app's progress notes come back in the result.

A write whose app went away during the call (its process died or was restarted, with its
supervisor or alone) may or may not have run. Where the app deduplicates the tool on Aurora's
idempotency key (`mcp.idempotency_key_tools`), the call is sent again under the same key once the
app's session is back, within the call's own time: the app answers with the first result, or runs
it once; it is sent again twice at most (`RESENDS`). Elsewhere its outcome stays unknown, for
the caller to check.
"""

from __future__ import annotations

import time
from typing import Any

import msgspec

from services.mcp_gateway.calls import classify, targets
from services.mcp_gateway.calls.caller import Caller
from services.mcp_gateway.calls.in_flight import CallsInFlight
from services.mcp_gateway.server_requests.input_required import InputRequestsFailed
from services.mcp_gateway.sessions.errors import CallInterrupted, CallTimedOut, SessionUnavailable
from services.mcp_gateway.sessions.session import AppSession
from shared.contracts.toolcall import IDEMPOTENCY_META_KEY, SideEffect, ToolCallContext, ToolCallRequest, ToolCallResult
from shared.contracts.tooldef import McpExecution, ToolDefinition
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway.calls")

# How often a write its app went away during is sent again: an app that dies on the call itself
# each time is not sent it without end.
RESENDS = 2


class McpExecutor:
    def __init__(self, sessions: dict[tuple[str, str], AppSession], calls: CallsInFlight | None = None) -> None:
        self.sessions = sessions
        self._calls = calls or CallsInFlight()  # MCP calls running now: what an app asks back finds its call

    async def execute(self, request: ToolCallRequest, tool: ToolDefinition, execution: McpExecution,
                      call_id: str, caller: Caller | None = None) -> ToolCallResult:
        session = self.sessions.get((execution.app, execution.instance))
        limit = session.app.mcp.call_timeout_seconds if session is not None else targets.DEFAULT_TIMEOUT
        timeout = targets.call_timeout(request.timeout_seconds, limit)
        return await self.call_session(session, execution.tool, request.arguments, tool.side_effect, timeout,
                                       call_id, context=request.context, caller=caller)

    async def call_session(
        self, session: AppSession | None, tool: str, arguments: dict[str, Any], side_effect: SideEffect,
        timeout: float, key: str | None = None, *, context: ToolCallContext | None = None,
        caller: Caller | None = None,
    ) -> ToolCallResult:
        """`key`: the idempotency key a write carries in `_meta` (apps that accept one deduplicate on it).
        `context`: whom the call is for, which elicitation and sampling requests during it need;
        the app's progress notes (by the call's `progressToken`) come back in the result.
        `caller`: who made the call, whom what the app asks during it is audited as.
        A write whose app went away during it is sent again under `key` where the app deduplicates
        the tool on it (the module says when)."""
        if session is None:
            return classify.failed("unavailable", "no_session", "the app has no session", side_effect=side_effect)
        deadline = time.monotonic() + timeout
        result = await self._call_once(session, tool, arguments, side_effect, timeout, key, context, caller)
        if key is None or side_effect == "read" or tool not in session.app.mcp.idempotency_key_tools:
            return result
        for sent_again in range(1, RESENDS + 1):
            if not classify.in_doubt(result, "app_went_away"):
                break
            back = self.sessions.get(session.key)
            if back is None or not await back.ready_within(deadline - time.monotonic()):
                return result
            log.info("an app went away during a write; sent again under its idempotency key", app=back.app.name,
                     tool=tool, call_id=key)
            again = await self._call_once(back, tool, arguments, side_effect, deadline - time.monotonic(), key,
                                          context, caller)
            if again.status == "unavailable":  # not sent this time; the first may have run
                return result
            result = msgspec.structs.replace(again, sent_again=sent_again)
        return result

    async def _call_once(self, session: AppSession, tool: str, arguments: dict[str, Any], side_effect: SideEffect,
                         timeout: float, key: str | None, context: ToolCallContext | None,
                         caller: Caller | None) -> ToolCallResult:
        with self._calls.running(session.key, tool, context or ToolCallContext(), call_id=key,
                                 timeout=timeout, caller=caller) as running:
            meta: dict[str, Any] = {"progressToken": running.token}
            if key is not None and side_effect != "read":
                meta[IDEMPOTENCY_META_KEY] = key
            result = await _call_running(session, tool, arguments, side_effect, timeout, meta)
        return msgspec.structs.replace(result, progress=list(running.progress)) if running.progress else result


async def _call_running(session: AppSession, tool: str, arguments: dict[str, Any], side_effect: SideEffect,
                        timeout: float, meta: dict[str, Any]) -> ToolCallResult:
    started = time.perf_counter()
    try:
        result = await session.call_tool(tool, arguments, timeout, meta)
    except CallTimedOut:
        return classify.timed_out(_ms(started), side_effect, timeout)
    except CallInterrupted as exc:
        return classify.interrupted(_ms(started), side_effect, str(exc))
    except SessionUnavailable as exc:
        return classify.failed("unavailable", "app_unavailable", str(exc), _ms(started), side_effect)
    except InputRequestsFailed as exc:  # a stateless app's question went unanswered: the call stopped
        return classify.failed("tool_error", "input_not_given", str(exc), _ms(started), side_effect)
    except RuntimeError as exc:  # the SDK's output-schema check: the app broke its own contract
        return classify.failed("tool_error", "invalid_output", str(exc), _ms(started), side_effect)
    except Exception as exc:
        return classify.failed("tool_error", "protocol_error", f"{type(exc).__name__}: {exc}", _ms(started),
                               side_effect)
    return classify.from_mcp_result(result, _ms(started), side_effect)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
