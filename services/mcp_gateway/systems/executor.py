"""HTTP tool calls: one request built from the tool's mapping, sent once, its answer classified.

| what happened                                      | read                         | write / dangerous             |
|----------------------------------------------------|------------------------------|-------------------------------|
| arguments missing or unexpected (nothing sent)     | denied `invalid_arguments`   | same                          |
| secret missing (nothing sent)                      | unavailable `secret_missing` | same                          |
| secret not declared to the gateway (nothing read)  | denied `secret_not_declared` | same                          |
| no connection (nothing sent)                       | unavailable `connect_failed` | same                          |
| timeout after the request went out                 | timeout `timeout`            | outcome_unknown `timeout`     |
| connection lost after the request went out         | unavailable `connection_lost`| outcome_unknown `connection_…`|
| 2xx (and the system's business contract agrees)    | ok                           | ok                            |
| 2xx, the contract says failure                     | business_error               | business_error                |
| 3xx, 4xx                                           | tool_error `http_<status>`   | tool_error `http_<status>`    |
| 5xx                                                | tool_error `http_<status>`   | outcome_unknown `http_<status>` |
|                                                    |                              | (501, 503: tool_error)        |

Whether the request went out is observed, not guessed: httpcore's `trace` extension reports the
moment the request headers start to be written. A write whose answer was lost is `outcome_unknown`
so the caller verifies before repeating it (with the same Idempotency-Key). One case is sent again
here: a write carrying the idempotency key of a system or operation that deduplicates on it, whose
connection failed after it went out (a kept-alive connection the server closed as the request was
written is the common cause), is sent once more at once, on a new connection, under the same key,
within the call's time; the system answers with the first result or runs it once. Nothing else is
retried. `HttpOutcome.transport_failure` tells the system's circuit breaker whether the
system itself looked unreachable (no connection, timeout, lost connection, HTTP 502/503/504).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from services.mcp_gateway.systems.http_errors import failure_detail
from services.mcp_gateway.systems.request import RequestBuildError, build_request
from services.mcp_gateway.systems.secrets import DeclaredSecrets, SecretMissing, UndeclaredSecret
from shared.contracts.system import AuthHeader, BusinessContract, System
from shared.contracts.toolcall import ToolCallResult, ToolError, ToolStatus
from shared.contracts.tooldef import HttpExecution, ToolDefinition
from shared.observability.logs import get_logger
from shared.redaction import MARKER as REDACTED

log = get_logger("aurora.mcp_gateway.http")

MAX_TEXT_BYTES = 16 * 1024  # of the body shown as a text block
MAX_BODY_BYTES = 4 * 1024 * 1024  # read at most this much of an answer
_GATEWAY_ERRORS = frozenset({502, 503, 504})
_NOT_PROCESSED = frozenset({501, 503})


@dataclass(frozen=True, slots=True)
class HttpOutcome:
    result: ToolCallResult
    transport_failure: bool = False  # counts against the system's circuit
    sent: bool = False  # the request started to go out on the wire


class HttpExecutor:
    def __init__(self, client: httpx.AsyncClient, secrets: Callable[[AuthHeader], str] | None = None) -> None:
        self._client = client
        # Nothing declared unless the caller says what the deployment gave: no auth is ever sent.
        self._secrets = secrets or DeclaredSecrets().read

    async def execute(self, system: System, tool: ToolDefinition, arguments: dict[str, Any], *,
                      idempotency_key: str | None, timeout: float | None = None) -> ToolCallResult:
        outcome = await self.call(system, tool, arguments, idempotency_key=idempotency_key, timeout=timeout)
        return outcome.result

    async def call(self, system: System, tool: ToolDefinition, arguments: dict[str, Any], *,
                   idempotency_key: str | None, timeout: float | None = None) -> HttpOutcome:
        """`execute` plus the signals the caller's circuit breaker needs."""
        call = _Call(system, tool, time.perf_counter())
        execution = tool.execution
        if not isinstance(execution, HttpExecution) or not system.base_url:
            return call.end("tool_error", "invalid_mapping", f"{tool.name} is not an HTTP tool of an HTTP system")
        if not system.enabled:
            return call.end("unavailable", "system_disabled", f"system {system.name} is disabled")
        required = tool.input_schema.get("required")
        try:
            parts = build_request(execution, system.base_url, arguments,
                                  [r for r in required if isinstance(r, str)] if isinstance(required, list) else [])
        except RequestBuildError as exc:
            return call.end("denied" if exc.code == "invalid_arguments" else "tool_error", exc.code, exc.message)
        headers = httpx.Headers({"Accept": "application/json"})
        headers.update(parts.headers)  # case-insensitive: the credential and key below replace any argument
        if system.auth is not None:
            try:
                call.secret = self._secrets(system.auth)
            except UndeclaredSecret as exc:  # stored before the rule: refused, nothing read or sent
                return call.end("denied", "secret_not_declared", f"the credential of system {system.name} "
                                                                 f"is refused: {exc}")
            except SecretMissing as exc:
                return call.end("unavailable", "secret_missing", f"the credential of system {system.name} is "
                                                                 f"missing: {exc.where}")
            except (LookupError, OSError) as exc:
                return call.end("unavailable", "secret_missing", f"the credential of system {system.name} cannot "
                                                                 f"be read ({type(exc).__name__})")
            scheme = system.auth.scheme
            headers[system.auth.header] = f"{scheme} {call.secret}" if scheme else call.secret
        key_header = execution.idempotency_header or (system.idempotency_header if tool.side_effect != "read"
                                                      else None)
        if idempotency_key and key_header:
            headers[key_header] = idempotency_key  # declared: the operation or its system deduplicates on it
        limit = timeout if timeout is not None else system.timeout_seconds

        async def trace(event: str, info: dict[str, Any]) -> None:
            if event.endswith("send_request_headers.started"):
                call.sent = True

        try:
            request = self._client.build_request(parts.method, parts.url, params=list(parts.query) or None,
                                                 headers=headers, content=parts.body, timeout=limit,
                                                 extensions={"trace": trace})
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            return call.end("tool_error", "invalid_mapping", f"bad URL for system {system.name}: {exc}")
        keyed = tool.side_effect != "read" and bool(idempotency_key and key_header)
        try:
            async with asyncio.timeout(limit):
                try:
                    response, body, complete = await self._exchange(request)
                except httpx.TransportError as lost:
                    if isinstance(lost, httpx.TimeoutException) or not (keyed and call.sent):
                        raise
                    log.info("the connection to a system was lost after a write went out; sent again under "
                             "its idempotency key", system=system.name, tool=tool.name,
                             error=f"{type(lost).__name__}: {failure_detail(lost)}")
                    call.sent_again = 1
                    response, body, complete = await self._exchange(request)
        except (TimeoutError, httpx.TimeoutException):
            return call.lost("timeout", f"no answer from system {system.name} within {limit:g}s")
        except httpx.TransportError as exc:
            again = " (sent again under its idempotency key, and lost again)" if call.sent_again else ""
            return call.lost("connection_lost", f"the connection to system {system.name} failed{again}: "
                                                f"{failure_detail(exc)}")
        return call.classify(response, body, complete)

    async def _exchange(self, request: httpx.Request) -> tuple[httpx.Response, bytes, bool]:
        response = await self._client.send(request, stream=True)
        try:
            body, complete = await _read_capped(response)
        finally:
            await response.aclose()
        return response, body, complete


class _Call:
    """One call's state: its clock, whether it went out, and the secret to keep out of the result."""

    def __init__(self, system: System, tool: ToolDefinition, started: float) -> None:
        self.system, self.tool, self.started = system, tool, started
        self.sent = False
        self.sent_again = 0  # sent once more after its connection was lost (keyed writes only)
        self.secret: str | None = None

    def end(self, status: ToolStatus, code: str | None = None, message: str = "", *,
            content: list[dict[str, Any]] | None = None, structured: dict[str, Any] | None = None,
            transport_failure: bool = False) -> HttpOutcome:
        result = ToolCallResult(
            status=status,
            content=self._redact(content or []),
            structured=self._redact(structured),
            error=ToolError(code=code, message=self._redact(message)) if code else None,
            duration_ms=round((time.perf_counter() - self.started) * 1000, 3),
            side_effect=self.tool.side_effect,
            sent_again=self.sent_again,
        )
        return HttpOutcome(result=result, transport_failure=transport_failure, sent=self.sent)

    def lost(self, code: str, message: str) -> HttpOutcome:
        """No answer: safe when nothing went out; after sending, a write's outcome is unknown."""
        if not self.sent:
            return self.end("unavailable", "connect_failed", f"the request could not be sent ({message}); "
                            "nothing was sent", transport_failure=True)
        if self.tool.side_effect == "read":
            status: ToolStatus = "timeout" if code == "timeout" else "unavailable"
            return self.end(status, code, message, transport_failure=True)
        return self.end("outcome_unknown", code, f"{message} after the request was sent; the {self.tool.side_effect} "
                        "may or may not have taken effect: verify before repeating it with the same "
                        "idempotency key", transport_failure=True)

    def classify(self, response: httpx.Response, body: bytes, complete: bool) -> HttpOutcome:
        code = response.status_code
        parsed, is_json = _parse_json(body) if complete else (None, False)
        text = body[:MAX_TEXT_BYTES].decode("utf-8", errors="replace")
        if len(body) > MAX_TEXT_BYTES or not complete:
            text += f"\n… [truncated; {'more than ' if not complete else ''}{len(body)} bytes]"
        content = [{"type": "text", "text": text}] if body else []
        structured = parsed if isinstance(parsed, dict) else None
        if 200 <= code < 300:
            own = self.tool.execution.contract if isinstance(self.tool.execution, HttpExecution) else None
            contract = own or self.system.contract  # the operation's own contract first
            verdict = _contract_failure(contract, parsed, is_json) if contract else None
            if verdict is not None:
                return self.end("business_error", verdict[0], verdict[1], content=content, structured=structured)
            return self.end("ok", content=content, structured=structured)
        where = f"system {self.system.name} answered HTTP {code} {response.reason_phrase}".rstrip()
        if code >= 500:
            gone = code in _GATEWAY_ERRORS
            if self.tool.side_effect != "read" and code not in _NOT_PROCESSED:
                return self.end("outcome_unknown", f"http_{code}", f"server error: {where} after receiving the "
                                f"request; the {self.tool.side_effect} may or may not have taken effect",
                                content=content, structured=structured, transport_failure=gone)
            return self.end("tool_error", f"http_{code}", f"server error (not a transport failure): {where}",
                            content=content, structured=structured, transport_failure=gone)
        detail = f" (redirect to {response.headers['location']} not followed)" if "location" in response.headers \
            else (f": {text[:300]}" if text else "")
        return self.end("tool_error", f"http_{code}", f"{where}{detail}", content=content, structured=structured)

    def _redact(self, value: Any) -> Any:
        secret = self.secret
        if not secret:
            return value
        if isinstance(value, str):
            return value.replace(secret, REDACTED)
        if isinstance(value, list):
            return [self._redact(item) for item in value]
        if isinstance(value, dict):
            return {self._redact(k): self._redact(v) for k, v in value.items()}
        return value


async def _read_capped(response: httpx.Response) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.aiter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return b"".join(chunks)[:MAX_BODY_BYTES], False
    return b"".join(chunks), True


def _parse_json(body: bytes) -> tuple[Any, bool]:
    if not body.strip():
        return None, False
    try:
        return json.loads(body), True
    except ValueError:
        return None, False


_MISSING = object()


def _lookup(body: Any, dotted: str) -> Any:
    node = body
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _same(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not `1`, `"0"` is not `0`, but `0` is `0.0`."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and bool(a == b)


def _contract_failure(contract: BusinessContract, parsed: Any, is_json: bool) -> tuple[str, str] | None:
    """(code, message) when a 2xx body is not a business success by the system's contract."""
    field = contract.success_field
    value = _lookup(parsed, field) if is_json else _MISSING
    if value is _MISSING:
        return "contract_violation", f"the body has no `{field}` field, so business success cannot be confirmed"
    if any(_same(value, ok) for ok in contract.success_values):
        return None
    message = _lookup(parsed, contract.message_field) if contract.message_field else _MISSING
    if message is _MISSING or message in (None, ""):
        expected = " or ".join(json.dumps(v) for v in contract.success_values)
        return "business_error", f"`{field}` is {json.dumps(value)} (success is {expected})"
    return "business_error", message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)
