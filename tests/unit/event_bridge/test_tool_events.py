"""The audit record of a call → the `tool.*` signal the bridge maps: only executed calls, the
outcome from the status, an id that is the same for the same record."""

from __future__ import annotations

import pytest

from services.event_bridge.tool_events import tool_signal
from shared.contracts.audit import AuditRecord


def record(**fields: object) -> AuditRecord:
    base: dict[str, object] = {"call_id": "c-1", "at": "2026-12-01T10:00:00.000Z", "tool": "acme.notes.add",
                               "system": "acme.notes", "caller": "agent:a", "status": "ok", "executed": True}
    return AuditRecord(**{**base, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize(("status", "code", "outcome"), [
    ("ok", None, "succeeded"), ("timeout", "timeout", "timeout"), ("tool_error", "tool_error", "failed"),
    ("outcome_unknown", "call_interrupted", "failed"), ("business_error", "not_found", "failed"),
])
def test_the_outcome_follows_the_status(status: str, code: str | None, outcome: str) -> None:
    signal = tool_signal(record(status=status, error_code=code, error_message="why" if code else None))
    assert signal is not None and signal.outcome == outcome and signal.status == status
    assert signal.error == ({"code": code, "message": "why"} if code else None)


def test_only_an_executed_call_on_an_app_or_system_is_an_event() -> None:
    assert tool_signal(record(executed=False)) is None
    assert tool_signal(record(system=None)) is None


def test_the_same_record_gives_the_same_id_and_another_record_another() -> None:
    first = tool_signal(record())
    assert first is not None and first == tool_signal(record())
    later = tool_signal(record(at="2026-12-01T10:05:00.000Z"))
    other = tool_signal(record(call_id="c-2"))
    assert later is not None and other is not None
    assert len({first.signal_id, later.signal_id, other.signal_id}) == 3
    assert (first.app, first.instance, first.observed_at) == ("acme.notes", "default", "2026-12-01T10:00:00.000Z")
