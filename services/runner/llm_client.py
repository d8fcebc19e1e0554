"""An OpenAI-compatible Chat Completions client (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM …).

One POST to `<base_url>/chat/completions` per turn, with the agent's tools. Transient failures
(connection refused, 429, 5xx) are retried twice with a short backoff — a model call has no side
effect; anything else is a `ModelFailed` naming the status and the server's message.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from services.runner.errors import RunnerError

_RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504}
_RETRIES = 2


class ModelFailed(RunnerError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class ModelCall:
    """Where and how to call: resolved from the agent's settings and the runner's defaults."""

    base_url: str
    model: str
    api_key: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float = 60.0


@dataclass(frozen=True)
class ToolCallProposal:
    id: str
    name: str
    arguments: str  # JSON text, exactly as the model wrote it


@dataclass(frozen=True)
class ChatTurn:
    content: str | None
    tool_calls: tuple[ToolCallProposal, ...] = ()
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)

    def message(self) -> dict[str, Any]:
        """The assistant message to send back in the next request (and keep in the step log)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


class ChatModel(Protocol):
    async def complete(self, call: ModelCall, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]] | None) -> ChatTurn: ...


class HttpChatModel:
    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def complete(self, call: ModelCall, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]] | None) -> ChatTurn:
        body: dict[str, Any] = {"model": call.model, "messages": messages}
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        if call.temperature is not None:
            body["temperature"] = call.temperature
        if call.max_tokens is not None:
            body["max_tokens"] = call.max_tokens
        headers = {"Authorization": f"Bearer {call.api_key}"} if call.api_key else {}
        url = call.base_url.rstrip("/") + "/chat/completions"
        for attempt in range(_RETRIES + 1):
            try:
                response = await self._client.post(url, json=body, headers=headers, timeout=call.timeout)
            except httpx.TimeoutException as exc:
                raise ModelFailed("model_timeout", f"the model did not answer within {call.timeout:g}s") from exc
            except httpx.TransportError as exc:
                if attempt < _RETRIES:
                    await asyncio.sleep(0.5 * (attempt + 1))
                    continue
                raise ModelFailed("model_unreachable", f"{url}: {type(exc).__name__}: {exc}") from exc
            if response.status_code in _RETRY_STATUS and attempt < _RETRIES:
                await asyncio.sleep(0.5 * (attempt + 1))
                continue
            if response.status_code != 200:
                raise ModelFailed("model_http_error", f"{url} answered {response.status_code}: {response.text[:500]}")
            return parse_turn(response.content)
        raise AssertionError("unreachable")


def parse_turn(raw: bytes) -> ChatTurn:
    """The first choice of a Chat Completions response; ModelFailed if it is not one."""
    try:
        body = json.loads(raw)
        choice = body["choices"][0]
        message = choice["message"]
        calls = tuple(
            ToolCallProposal(id=str(c["id"]), name=str(c["function"]["name"]),
                             arguments=str(c["function"].get("arguments") or "{}"))
            for c in message.get("tool_calls") or []
        )
        content = message.get("content")
        usage = body.get("usage") or {}
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        raise ModelFailed("model_bad_response", f"not a Chat Completions response: {raw[:300]!r}") from exc
    return ChatTurn(content=content if isinstance(content, str) else None, tool_calls=calls,
                    finish_reason=choice.get("finish_reason"), usage=usage if isinstance(usage, dict) else {})
