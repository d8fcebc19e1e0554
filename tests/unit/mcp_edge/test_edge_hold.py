"""Holding a call for its approval: the decision decides, the wait is bounded, progress says why."""

from __future__ import annotations

from typing import Any

import pytest

from services.mcp_edge.gate import Caller
from services.mcp_edge.hold import call_held
from shared.contracts.approval import Approval
from shared.contracts.toolcall import ToolCallResult

CALLER = Caller(agent="a", token_id="t1", token_name="n")


class Decisions:
    """The gateway as the edge sees it, scripted: the first call needs approval `apr-1`, whose
    state follows `states`; a call presenting the approval runs."""

    def __init__(self, *states: str) -> None:
        self.states = list(states)
        self.calls: list[tuple[str, str | None]] = []

    async def call(self, caller: Caller, tool: str, arguments: dict[str, Any], *, task_id: str,
                   approval_id: str | None = None) -> ToolCallResult:
        self.calls.append((task_id, approval_id))
        if approval_id is None:
            return ToolCallResult(status="needs_approval", approval_id="apr-1")
        return ToolCallResult(status="ok", structured={"ran": True}, approval_id=approval_id)

    async def approval(self, approval_id: str) -> Approval | None:
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return Approval(id=approval_id, tool="x.w", args_hash="h", task_id="t", state=state,  # type: ignore[arg-type]
                        requested_at="2026-01-01T00:00:00+00:00", expires_at="2026-01-02T00:00:00+00:00",
                        decided_by="ops" if state != "pending" else None, note="no" if state == "denied" else None)


async def test_granted_runs_once_with_the_approval_and_the_same_task() -> None:
    gate = Decisions("pending", "pending", "granted")
    said: list[str] = []

    async def progress(done: float, message: str) -> None:
        said.append(message)

    result = await call_held(gate, CALLER, "x.w", {}, progress, wait_seconds=5, poll_seconds=0.01)
    assert result.status == "ok" and result.approval_id == "apr-1"
    (first_task, none), (second_task, used) = gate.calls
    assert none is None and used == "apr-1" and first_task == second_task
    assert said and said[0] == "waiting for approval apr-1 (x.w)"


@pytest.mark.parametrize(("state", "code"), [("denied", "approval_denied"), ("expired", "approval_expired")])
async def test_denied_or_expired_is_a_refusal_with_the_reason(state: str, code: str) -> None:
    gate = Decisions("pending", state)

    async def progress(done: float, message: str) -> None:
        return None

    result = await call_held(gate, CALLER, "x.w", {}, progress, wait_seconds=5, poll_seconds=0.01)
    assert result.status == "denied" and result.error is not None and result.error.code == code
    assert "apr-1" in result.error.message and len(gate.calls) == 1  # nothing ran


async def test_the_wait_is_bounded() -> None:
    gate = Decisions("pending")

    async def progress(done: float, message: str) -> None:
        return None

    result = await call_held(gate, CALLER, "x.w", {}, progress, wait_seconds=0.05, poll_seconds=0.01)
    assert result.error is not None and result.error.code == "approval_wait_timeout"
    assert len(gate.calls) == 1
