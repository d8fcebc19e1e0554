"""`amp.tool.call`: one envelope in, one envelope out, whatever happens in between."""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

import msgspec

from services.mcp_gateway import classify
from services.mcp_gateway.catalog import CatalogTool, ToolCatalog
from services.mcp_gateway.session import AppSession, CallTimedOut, SessionUnavailable
from shared.clock import now_iso
from shared.contracts.envelope import Header, Source
from shared.contracts.toolcall import (
    METHOD_CALL,
    METHOD_RESULT,
    ToolCallEnvelope,
    ToolCallRequest,
    ToolCallResult,
    ToolResultEnvelope,
    decode_request,
)

GATEWAY_APP = "aurora.gateway"


class Authorizer(Protocol):
    """Decides whether a request may run (tool pool governance plugs in here)."""

    async def check(self, request: ToolCallRequest, tool: CatalogTool) -> ToolCallResult | None: ...


class AllowAll:
    async def check(self, request: ToolCallRequest, tool: CatalogTool) -> ToolCallResult | None:
        return None


@dataclass(frozen=True)
class CallRecord:
    """What the gateway reports of each executed call (to the bridge, later to the audit)."""

    request: ToolCallRequest
    tool: CatalogTool | None
    result: ToolCallResult
    call_id: str


class ToolCallHandler:
    def __init__(
        self,
        catalog: ToolCatalog,
        sessions: dict[tuple[str, str], AppSession],
        *,
        authorizer: Authorizer | None = None,
        on_result: Callable[[CallRecord], Awaitable[None]] | None = None,
        default_timeout: float = 30.0,
    ) -> None:
        self._catalog = catalog
        self._sessions = sessions
        self._authorizer = authorizer or AllowAll()
        self._on_result = on_result
        self._default_timeout = default_timeout

    async def handle(self, data: bytes) -> bytes:
        started = time.perf_counter()
        try:
            envelope = decode_request(data)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            return _reply(
                None, GATEWAY_APP, classify.failed("denied", "invalid_request", f"malformed tool call: {exc}")
            )
        if envelope.header.method != METHOD_CALL:
            return _reply(
                envelope,
                GATEWAY_APP,
                classify.failed(
                    "denied",
                    "invalid_request",
                    f"header.method must be {METHOD_CALL!r}, not {envelope.header.method!r}",
                ),
            )
        request = envelope.payload
        tool = self._catalog.get(request.tool)
        if tool is None:
            return _reply(
                envelope,
                GATEWAY_APP,
                classify.failed("denied", "unknown_tool", f"no tool named {request.tool!r} in the catalog"),
            )
        result = await self._execute(request, tool)
        result = msgspec.structs.replace(result, duration_ms=round((time.perf_counter() - started) * 1000, 3))
        if self._on_result is not None:
            await self._on_result(
                CallRecord(request=request, tool=tool, result=result, call_id=envelope.header.message_id)
            )
        return _reply(envelope, tool.app_id, result)

    async def _execute(self, request: ToolCallRequest, tool: CatalogTool) -> ToolCallResult:
        refusal = await self._authorizer.check(request, tool)
        if refusal is not None:
            return refusal
        if request.context.synthetic and tool.side_effect != "read":
            return ToolCallResult(
                status="suppressed",
                side_effect=tool.side_effect,
                content=[{"type": "text", "text": f"synthetic run: {tool.name} was not called"}],
                structured={"would_call": tool.name, "arguments": request.arguments},
            )
        session = self._sessions.get(tool.app_key)
        if session is None:
            return classify.failed(
                "unavailable", "no_session", f"app {tool.app_name!r} has no session", side_effect=tool.side_effect
            )
        timeout = min(
            request.timeout_seconds or session.app.mcp.call_timeout_seconds, session.app.mcp.call_timeout_seconds
        )
        started = time.perf_counter()
        try:
            result = await session.call_tool(tool.tool, request.arguments, timeout)
        except CallTimedOut:
            return classify.timed_out(_ms(started), tool.side_effect, timeout)
        except SessionUnavailable as exc:
            return classify.failed("unavailable", "app_unavailable", str(exc), _ms(started), tool.side_effect)
        except RuntimeError as exc:  # the SDK's output-schema check: the app broke its own contract
            return classify.failed("tool_error", "invalid_output", str(exc), _ms(started), tool.side_effect)
        except Exception as exc:
            return classify.failed(
                "tool_error", "protocol_error", f"{type(exc).__name__}: {exc}", _ms(started), tool.side_effect
            )
        return classify.from_mcp_result(result, _ms(started), tool.side_effect)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def _reply(request: ToolCallEnvelope | None, app_id: str, result: ToolCallResult) -> bytes:
    header = Header(
        method=METHOD_RESULT,
        message_id=str(uuid.uuid4()),
        timestamp=now_iso(),
        source=Source(app=app_id),
        trace=request.header.trace if request is not None else None,
    )
    return msgspec.json.encode(ToolResultEnvelope(header=header, payload=result))
