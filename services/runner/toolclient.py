"""Tool calls through the gateway (`amp.tool.call`), the only way a runner reaches a tool.

Whatever happens on the wire becomes a `ToolCallResult`: no gateway listening is `unavailable`
(nothing was executed); no reply in time is `timeout` for a read and `outcome_unknown` for
anything else (the call may have run).
"""

from __future__ import annotations

import uuid
from typing import Protocol

import msgspec
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from shared.clock import now_iso
from shared.contracts.envelope import Header, Source, Trace
from shared.contracts.signals import RUNNER_APP
from shared.contracts.toolcall import (
    METHOD_CALL,
    ToolCallEnvelope,
    ToolCallRequest,
    ToolCallResult,
    ToolError,
    decode_result,
    encode,
)

_CALL_NAMESPACE = uuid.UUID("5d1c9f0e-7b2a-4e61-9c3d-8a4f2e6b1d07")
# The gateway answers within the call's timeout; this much more is allowed for the wire.
REPLY_MARGIN = 5.0


def call_id_for(task_id: str, step_id: str, attempt: int) -> str:
    """The envelope id of a step's call: the gateway audits the call under it."""
    return str(uuid.uuid5(_CALL_NAMESPACE, f"{task_id}\n{step_id}\n{attempt}"))


class ToolClient(Protocol):
    async def call(self, request: ToolCallRequest, *, call_id: str, timeout: float,
                   side_effect: str | None, trace: Trace | None = None) -> ToolCallResult: ...


class NatsToolClient:
    def __init__(self, nc: NATS, subject: str, *, instance: str) -> None:
        self._nc = nc
        self._subject = subject
        self._source = Source(app=RUNNER_APP, instance=instance[:64] or "default")

    async def call(self, request: ToolCallRequest, *, call_id: str, timeout: float,
                   side_effect: str | None, trace: Trace | None = None) -> ToolCallResult:
        """`trace`: the event's, so the call (and the `tool.*` event it causes) stays in its trace."""
        envelope = ToolCallEnvelope(
            header=Header(method=METHOD_CALL, message_id=call_id, timestamp=now_iso(), source=self._source,
                          trace=trace),
            payload=msgspec.structs.replace(request, timeout_seconds=timeout),
        )
        try:
            reply = await self._nc.request(self._subject, encode(envelope), timeout=timeout + REPLY_MARGIN)
        except NoRespondersError:
            return _failed("unavailable", "no_gateway", "no mcp-gateway answers tool calls", side_effect)
        except (NatsTimeoutError, TimeoutError):
            if side_effect == "read":
                return _failed("timeout", "no_reply", f"the gateway did not answer within {timeout:g}s", side_effect)
            return _failed("outcome_unknown", "no_reply",
                           f"the gateway did not answer within {timeout:g}s; the call may have run", side_effect)
        try:
            return decode_result(reply.data).payload
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            status = "tool_error" if side_effect == "read" else "outcome_unknown"
            return _failed(status, "bad_reply", f"the gateway's reply is malformed: {exc}", side_effect)


def _failed(status: str, code: str, message: str, side_effect: str | None) -> ToolCallResult:
    return ToolCallResult(
        status=status,  # type: ignore[arg-type]
        error=ToolError(code=code, message=message),
        side_effect=side_effect if side_effect in ("read", "write", "dangerous") else None,  # type: ignore[arg-type]
    )
