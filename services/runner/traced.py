"""Spans around the runner's two kinds of outgoing call, wrapped around the clients in the
composition root so that no driver knows about tracing: a model call (`chat <model>`, with
the OpenTelemetry GenAI attributes) and a tool call (`tools/call <tool>`), each a child of
the run's span, the tool call's envelope carrying the tool call's own span on to the gateway.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from services.runner.model.client import ChatModel, ChatTurn, ModelCall
from services.runner.tools.client import ToolClient
from shared.contracts.envelope import Trace
from shared.contracts.toolcall import ToolCallRequest, ToolCallResult
from shared.observability import tracing


class TracedChatModel:
    def __init__(self, inner: ChatModel) -> None:
        self._inner = inner

    async def complete(self, call: ModelCall, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]] | None) -> ChatTurn:
        address = urlsplit(call.base_url)
        with tracing.calling(f"chat {call.model}", attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",  # the Chat Completions API, whoever serves it
            "gen_ai.request.model": call.model,
            "gen_ai.request.temperature": call.temperature,
            "gen_ai.request.max_tokens": call.max_tokens,
            "server.address": address.hostname,
            "server.port": address.port,
        }) as span:
            turn = await self._inner.complete(call, messages, tools)
            usage = turn.usage
            span.update({
                "gen_ai.usage.input_tokens": _int(usage.get("prompt_tokens")),
                "gen_ai.usage.output_tokens": _int(usage.get("completion_tokens")),
                "gen_ai.response.finish_reasons": turn.finish_reason,
                "aurora.model.tool_calls": len(turn.tool_calls),
            })
            return turn


class TracedToolClient:
    def __init__(self, inner: ToolClient) -> None:
        self._inner = inner

    async def call(self, request: ToolCallRequest, *, call_id: str, timeout: float,
                   side_effect: str | None, trace: Trace | None = None) -> ToolCallResult:
        with tracing.calling(f"tools/call {request.tool}", trace, attributes={
            "mcp.method.name": "tools/call",
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": request.tool,
            "gen_ai.tool.call.id": call_id,
            "aurora.tool.side_effect": side_effect,
        }) as span:
            result = await self._inner.call(request, call_id=call_id, timeout=timeout, side_effect=side_effect,
                                            trace=span.trace)
            span.set("aurora.tool.status", result.status)
            if result.status != "ok":
                span.error(result.error.code if result.error else result.status)
            return result


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
