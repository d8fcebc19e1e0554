"""The runner's patience with a lost answer, and what recovery makes of the gateway's answers."""

from __future__ import annotations

from services.runner.tasks import recovery
from services.runner.tools.client import Reask
from shared.contracts.toolcall import ToolCallResult, ToolError


def test_asks_again_a_bounded_number_of_times_with_growing_pauses() -> None:
    assert list(Reask(attempts=6, first_delay=0.5, max_delay=4.0).delays()) == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert list(Reask(attempts=0).delays()) == []


def _failed(status: str, code: str) -> ToolCallResult:
    return ToolCallResult(status=status, error=ToolError(code=code, message=f"{code} said"))  # type: ignore[arg-type]


def test_recovery_tells_an_answer_from_no_answer() -> None:
    for code in ("no_reply", "no_gateway", "call_in_progress", "call_in_doubt"):
        assert recovery.unanswered(_failed("outcome_unknown", code)), code
    assert not recovery.unanswered(ToolCallResult(status="ok"))
    assert not recovery.unanswered(_failed("tool_error", "tool_error"))
    assert not recovery.unanswered(_failed("needs_approval", "x"))
    assert recovery.doubt_of(_failed("outcome_unknown", "call_in_doubt")) == "the gateway answered: call_in_doubt said"
    assert recovery.doubt_of(_failed("outcome_unknown", "no_reply")) is None
