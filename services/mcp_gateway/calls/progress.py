"""How far one tool call got, so a failure inside the gateway can still be answered honestly.

Every call on `amp.tool.call` / `amp.admin.tools.call` gets an envelope reply, even when the
gateway itself fails while handling it (a KV error, a broken assertion). What the caller may do
next depends on where the failure happened, which the reply's status says:

- `unavailable`: the failure came before any executor could have sent the call to an app or a
  system: nothing ran, the caller may retry;
- `outcome_unknown`: a write or dangerous call failed after its executor may have sent it: it may
  or may not have taken effect, so it must be checked, never blindly repeated;
- `tool_error`: the same for a read, which has no effect to check.

The tool-call handler marks the moment with `sending()` just before it hands a call to an
executor. The mark lives in a context variable because each call is served in its own asyncio
task (which has its own copy of the context): the catch-all where the handler is invoked reads
it without every function on the call path passing a progress object along.
"""

from __future__ import annotations

import uuid
from contextvars import ContextVar
from dataclasses import dataclass, field

from shared.contracts.toolcall import SideEffect, ToolCallResult, ToolError, ToolStatus


@dataclass
class CallProgress:
    """The tools (by the name the caller asked for) whose executor was reached, with their side effect."""

    sent: dict[str, SideEffect] = field(default_factory=dict)


_current: ContextVar[CallProgress | None] = ContextVar("aurora_gateway_call_progress", default=None)


def track() -> CallProgress:
    """Start tracking the call served by the current task; returns what `sending` will fill in."""
    progress = CallProgress()
    _current.set(progress)
    return progress


def sending(tool: str, side_effect: SideEffect) -> None:
    """Called just before an executor may send `tool` (the requested name) to an app or system."""
    progress = _current.get()
    if progress is not None:
        progress.sent[tool] = side_effect


def internal_failure(progress: CallProgress, tool: str | None, error_id: str) -> ToolCallResult:
    """The reply to a call whose handling raised: `internal_error` with the id the log has too."""
    side_effect = progress.sent.get(tool) if tool is not None else None
    status: ToolStatus
    if side_effect is None:
        status, what = "unavailable", "the call was not run; it may be retried"
    elif side_effect == "read":
        status, what = "tool_error", "the read may have been sent; its result is lost"
    else:
        status, what = "outcome_unknown", f"the {side_effect} may or may not have taken effect: check before retrying"
    return ToolCallResult(
        status=status,
        side_effect=side_effect,
        error=ToolError(code="internal_error", message=f"internal gateway error {error_id}: {what}"),
    )


def new_error_id() -> str:
    return str(uuid.uuid4())
