"""Tool calls on `amp.tool.call`: request and reply payloads inside AMP envelopes.

Every request gets an envelope reply (method `tools/result`); errors never travel only as
NATS headers. A transport success is not a tool success: `status` says what happened.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from shared.contracts.envelope import Envelope, decode_bounded

METHOD_CALL = "tools/call"
METHOD_RESULT = "tools/result"

ToolStatus = Literal[
    "ok",
    "tool_error",
    "business_error",
    "timeout",
    "outcome_unknown",
    "unavailable",
    "denied",
    "needs_approval",
    "suppressed",
]
SideEffect = Literal["read", "write", "dangerous"]


class ToolActor(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    kind: str


class ToolCallContext(msgspec.Struct, frozen=True, kw_only=True):
    """Who calls and why; `agent: None` is an operator call.

    On `amp.tool.call` the gateway requires `run_id` and `task_id` (= the run id) and decides
    from the router's run record, not from this context: `agent` must be absent or the run's;
    `delivery`, `actor` and `session_id` are kept on the wire for compatibility and ignored
    (replaced by the record's); `synthetic` can only add to the record's. See
    `services.mcp_gateway.calls.custody`.
    """

    agent: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    step_id: str | None = None
    session_id: str | None = None
    actor: ToolActor | None = None
    approval_id: str | None = None
    idempotency_key: str | None = None
    synthetic: bool = False
    delivery: dict[str, Any] | None = None


class ToolCallRequest(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    arguments: dict[str, Any] = msgspec.field(default_factory=dict)
    context: ToolCallContext = msgspec.field(default_factory=ToolCallContext)
    timeout_seconds: float | None = None


class ToolError(msgspec.Struct, frozen=True, kw_only=True):
    code: str
    message: str


class ToolProgress(msgspec.Struct, frozen=True, kw_only=True):
    """One `notifications/progress` the app sent during the call (the runner makes it a task step)."""

    progress: float | None = None
    total: float | None = None
    message: str | None = None
    at: str


class ToolCallResult(msgspec.Struct, frozen=True, kw_only=True):
    status: ToolStatus
    content: list[dict[str, Any]] = msgspec.field(default_factory=list)
    structured: dict[str, Any] | None = None
    error: ToolError | None = None
    duration_ms: float = 0.0
    approval_id: str | None = None
    side_effect: SideEffect | None = None
    progress: list[ToolProgress] = msgspec.field(default_factory=list)  # the app's progress notes, in order
    # How many times a write was sent again under its idempotency key, its app or connection lost
    # after it went out (0: sent once, or not at all); the answer is the last send's.
    sent_again: int = 0


ToolCallEnvelope = Envelope[ToolCallRequest]
ToolResultEnvelope = Envelope[ToolCallResult]

_encoder = msgspec.json.Encoder()
_request_decoder = msgspec.json.Decoder(ToolCallEnvelope)
_result_decoder = msgspec.json.Decoder(ToolResultEnvelope)


def encode(value: msgspec.Struct) -> bytes:
    return _encoder.encode(value)


def decode_request(data: bytes) -> ToolCallEnvelope:
    """Raises msgspec.ValidationError / DecodeError naming the bad field (also for nesting too deep)."""
    return decode_bounded(_request_decoder, data)


def decode_result(data: bytes) -> ToolResultEnvelope:
    return decode_bounded(_result_decoder, data)


# The `_meta` key under which the gateway passes a write's idempotency key (its call id) to an MCP
# tool. A tool that deduplicates on it returns its first result for a key it has seen and does
# nothing again; an app declares such tools in `mcp.idempotency_key_tools` (apps/config.yml).
IDEMPOTENCY_META_KEY = "aurora/idempotency_key"
