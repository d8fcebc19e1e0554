"""An OpenAI-compatible Chat Completions client (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM …).

One POST to `<base_url>/chat/completions` per turn, with the agent's tools. A server that is not
there yet — the connection refused or not made in time, 429, 502, 503, 504 — is
`ModelUnavailable` at once (with its `Retry-After`): the run waits for it durably, with backoff,
until the agent's deadline (`retry.py`), since a local model server loading a model takes tens
of seconds. Other transient failures (a 500, 408, 409) are retried twice with a short backoff —
a model call has no side effect; anything else is a `ModelFailed` naming the status and the
server's message (a 4xx other than 429: nothing to wait for).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Protocol

import httpx

from services.runner.errors import RunnerError
from shared.lifecycle import Lifecycle

_RETRY_STATUS = {408, 409, 500}
_UNAVAILABLE_STATUS = {429, 502, 503, 504}
_RETRIES = 2
RETRY_AFTER_LIMIT = 3600.0  # a Retry-After further out than this is read as this


class ModelFailed(RunnerError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class ModelUnavailable(ModelFailed):
    """The model server is not there (yet): nothing was asked of it, so the run may wait."""

    def __init__(self, message: str, *, retry_after: float | None = None) -> None:
        super().__init__("model_unreachable", message)
        self.retry_after = retry_after


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
        """The assistant message to send back in the next request (and keep in the step log).
        A turn of tool calls without text sends `content: ""`: llama-cpp-python's server refuses
        null (HTTP 500, a validation error) and its chat templates read a missing one as an error,
        either way failing the whole next turn; OpenAI-compatible servers take the empty string."""
        message: dict[str, Any] = {"role": "assistant", "content": self.content or ""}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return message


class ChatModel(Protocol):
    async def complete(self, call: ModelCall, messages: list[dict[str, Any]],
                       tools: list[dict[str, Any]] | None) -> ChatTurn: ...


class HttpChatModel(Lifecycle[None]):
    """Chat Completions over `client`; as a part of a service, its `stop()` closes the client's
    connections (a client it is only lent, never started, is its lender's to close)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        super().__init__("the model client")
        self._client = client

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        parts.push_async_callback(self._client.aclose)

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
            except (httpx.ConnectTimeout, httpx.PoolTimeout) as exc:  # the request never went out
                raise ModelUnavailable(f"{url}: no connection within {call.timeout:g}s") from exc
            except httpx.TimeoutException as exc:
                raise ModelFailed("model_timeout", f"the model did not answer within {call.timeout:g}s") from exc
            except httpx.ConnectError as exc:
                raise ModelUnavailable(f"{url}: {type(exc).__name__}: {exc}") from exc
            except httpx.TransportError as exc:
                if attempt < _RETRIES:
                    await asyncio.sleep(0.5 * (attempt + 1))
                    continue
                raise ModelFailed("model_unreachable", f"{url}: {type(exc).__name__}: {exc}") from exc
            if response.status_code in _UNAVAILABLE_STATUS:
                raise ModelUnavailable(f"{url} answered {response.status_code}: {response.text[:300]}",
                                       retry_after=retry_after(response.headers.get("Retry-After")))
            if response.status_code in _RETRY_STATUS and attempt < _RETRIES:
                await asyncio.sleep(0.5 * (attempt + 1))
                continue
            if response.status_code != 200:
                raise ModelFailed("model_http_error", f"{url} answered {response.status_code}: {response.text[:500]}")
            return parse_turn(response.content)
        raise AssertionError("unreachable")


def retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds a `Retry-After` header asks for (delta-seconds or an HTTP date); None if absent
    or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - (now or datetime.now(UTC))).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), RETRY_AFTER_LIMIT)


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
