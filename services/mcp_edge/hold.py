"""A call that needs approval is held while the approval is pending, and says so.

The gateway answers a write without an approval `needs_approval` (and records a pending
approval for this call's task). The edge then waits — up to its configured time — reporting
progress ("waiting for approval <id>"), and asks again with the approval once it is granted: the
gateway consumes it exactly once for the same tool, arguments and task. Denied, expired or
still pending at the deadline: a tool error that says which. A client that declared the tasks
extension is not held: its call becomes a task (`edge_tasks`), which takes the same decision
(`decided`) when the client polls.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from services.mcp_edge.gate import Caller
from shared.contracts.approval import Approval
from shared.contracts.toolcall import ToolCallResult, ToolError
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_edge.hold")

Progress = Callable[[float, str], Awaitable[None]]


class Gating(Protocol):
    """What holding needs of the gateway (`gate.Gate`)."""

    async def call(self, caller: Caller, tool: str, arguments: dict[str, Any], *, task_id: str,
                   approval_id: str | None = None) -> ToolCallResult: ...

    async def approval(self, approval_id: str) -> Approval | None: ...


def refused(code: str, message: str, approval_id: str) -> ToolCallResult:
    return ToolCallResult(status="denied", error=ToolError(code=code, message=message), approval_id=approval_id)


def new_task_id() -> str:
    """One task per external call: its approval pairs with it alone, its client's requests name it."""
    return f"edge-{uuid.uuid4().hex}"


async def decided(gate: Gating, caller: Caller, tool: str, arguments: dict[str, Any], *, task_id: str,
                  approval_id: str) -> ToolCallResult | None:
    """The call's result once its approval is decided: run with the approval when granted, a
    refusal that says why when denied, expired, used or gone; None while it is pending."""
    approval = await gate.approval(approval_id)
    state = approval.state if approval is not None else "unknown"
    if state == "granted":
        return await gate.call(caller, tool, arguments, task_id=task_id, approval_id=approval_id)
    if state in ("denied", "expired", "consumed", "unknown"):
        note = f" ({approval.note})" if approval is not None and approval.note else ""
        by = f" by {approval.decided_by}" if approval is not None and approval.decided_by else ""
        return refused(f"approval_{state}", f"approval {approval_id} for {tool} was {state}{by}{note}", approval_id)
    return None


async def call_held(gate: Gating, caller: Caller, tool: str, arguments: dict[str, Any], progress: Progress, *,
                    wait_seconds: float, poll_seconds: float = 0.5, task_id: str | None = None) -> ToolCallResult:
    task_id = task_id or new_task_id()
    result = await gate.call(caller, tool, arguments, task_id=task_id)
    if result.status != "needs_approval" or result.approval_id is None:
        return result
    return await held(gate, caller, tool, arguments, progress, task_id=task_id, approval_id=result.approval_id,
                      wait_seconds=wait_seconds, poll_seconds=poll_seconds)


async def held(gate: Gating, caller: Caller, tool: str, arguments: dict[str, Any], progress: Progress, *,
               task_id: str, approval_id: str, wait_seconds: float, poll_seconds: float) -> ToolCallResult:
    """Wait in the request for the approval's decision, saying so about every 2 s."""
    deadline = time.monotonic() + wait_seconds
    step = 0
    try:
        while True:
            result = await decided(gate, caller, tool, arguments, task_id=task_id, approval_id=approval_id)
            if result is not None:
                return result
            if time.monotonic() >= deadline:
                return refused("approval_wait_timeout", f"approval {approval_id} for {tool} is still pending "
                               f"after {wait_seconds:g} s; nothing was called", approval_id)
            if step % max(1, round(2 / poll_seconds)) == 0:  # about every 2 s, the first at once
                await progress(step * poll_seconds, f"waiting for approval {approval_id} ({tool})")
            step += 1
            await asyncio.sleep(poll_seconds)
    except asyncio.CancelledError:  # the client went (MCP: a disconnect cancels the request)
        log.info("held call cancelled: nothing will run", approval=approval_id, tool=tool, task=task_id)
        raise
