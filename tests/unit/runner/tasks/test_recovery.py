"""What a resumed task does with each step of its log."""

from __future__ import annotations

import msgspec
import pytest

from services.runner.tasks.recovery import (
    action_for,
    arguments_differ_check,
    earlier_attempts_began,
    from_audit,
    not_settled,
    pending_lookups,
    unverified_check,
    waiting_for_approval,
)
from services.runner.tasks.statemachine import claim, new_task, record_steps, transition
from shared.contracts.audit import AuditRecord
from shared.contracts.toolcall import ToolCallResult, ToolError
from tests.unit.runner.factories import NOW, a_run, a_step, an_event


def test_a_step_never_started_is_run() -> None:
    assert action_for(None) == "run"


@pytest.mark.parametrize("status", ["finished", "skipped"])
@pytest.mark.parametrize("side_effect", ["read", "write", "dangerous", None])
def test_a_step_with_an_outcome_is_reused_never_run_again(status: str, side_effect: str | None) -> None:
    assert action_for(a_step(status=status, side_effect=side_effect)) == "reuse"


@pytest.mark.parametrize("kind", ["model", "stage", "verify"])
def test_started_model_calls_stages_and_read_backs_are_repeated(kind: str) -> None:
    assert action_for(a_step(status="started", kind=kind, side_effect=None)) == "repeat"


def test_a_started_read_is_repeated() -> None:
    assert action_for(a_step(status="started", side_effect="read")) == "repeat"


@pytest.mark.parametrize(("kind", "side_effect"), [
    ("tool", "write"), ("tool", "dangerous"), ("tool", None), ("delivery", "write"), ("delivery", "read"),
])
def test_a_started_write_or_delivery_is_looked_up_not_repeated(kind: str, side_effect: str | None) -> None:
    assert action_for(a_step(status="started", kind=kind, side_effect=side_effect)) == "look_up"


def test_pending_lookups_are_the_started_side_effects() -> None:
    task = record_steps(new_task(a_run(), an_event(), runner="r", now=NOW), [
        a_step("read", status="started", side_effect="read"),
        a_step("write", status="started", side_effect="write"),
        a_step("done", side_effect="write", classification="ok"),
    ], now=NOW)
    assert [s.id for s in pending_lookups(task)] == ["write"]


def test_the_check_says_what_where_and_why() -> None:
    step = a_step("book", status="started", side_effect="write", arguments={"room": 5, "who": "张三"},
                  call_id="call-9")
    check = unverified_check(step, system="rooms")
    assert check.startswith("check in rooms whether app.tool was carried out")
    assert '{"room": 5, "who": "张三"}' in check and "call call-9" in check and "step book" in check
    assert "gateway audit has no record" in check and check.endswith("it was not repeated")
    reply = unverified_check(a_step("deliver", status="started", kind="delivery"), reason="the gateway timed out")
    assert "whether the reply was carried out" in reply and "the gateway timed out" in reply


def test_a_resumed_write_sent_before_with_other_arguments_says_what_to_check() -> None:
    step = a_step("deliver", status="started", kind="delivery", side_effect="write", arguments={"text": "5 bar"},
                  call_id="call-9")
    refused = ToolCallResult(status="denied", error=ToolError(code="call_id_reused", message="other arguments"))
    assert not_settled(refused)
    check = arguments_differ_check(step, refused)
    assert check.startswith("check what the reply an earlier attempt of this task sent")
    assert "call call-9" in check and "aurora audit tail" in check and '{"text": "5 bar"}' in check
    assert "other arguments" in check and check.endswith("it was not sent again")


@pytest.mark.parametrize(("result", "settled"), [
    (ToolCallResult(status="ok"), True),
    (ToolCallResult(status="needs_approval"), True),
    (ToolCallResult(status="unavailable", error=ToolError(code="app_unavailable", message="")), True),
    (ToolCallResult(status="outcome_unknown", error=ToolError(code="call_in_doubt", message="")), False),
    (ToolCallResult(status="outcome_unknown", error=ToolError(code="no_reply", message="")), False),
    (ToolCallResult(status="unavailable", error=ToolError(code="ledger_unavailable", message="")), False),
])
def test_what_a_resumed_write_takes_as_its_outcome(result: ToolCallResult, settled: bool) -> None:
    assert not_settled(result) is not settled


def test_an_unrecorded_write_may_have_been_sent_since_the_first_attempt_that_ended_without_a_word() -> None:
    event_at = "2026-06-19T11:59:59+08:00"
    task = new_task(a_run(), an_event(), runner="r1", now="2026-06-19T12:00:00+08:00")
    assert earlier_attempts_began(task, event_at=event_at) == "2026-06-19T12:00:00+08:00"
    resumed = claim(claim(task, runner="r2", now="2026-06-19T12:01:00+08:00"), runner="r3",
                    now="2026-06-19T12:02:00+08:00")  # two runners died in a row
    assert earlier_attempts_began(resumed, event_at=event_at) == "2026-06-19T12:00:00+08:00"
    # A wait the task recorded carried what its attempt had done: only what came after counts.
    waited = transition(resumed, "queued", by="r3", now="2026-06-19T12:03:00+08:00", reason="waiting")
    again = claim(claim(waited, runner="r4", now="2026-06-19T12:04:00+08:00"), runner="r5",
                  now="2026-06-19T12:05:00+08:00")
    assert earlier_attempts_began(again, event_at=event_at) == "2026-06-19T12:04:00+08:00"


def test_a_run_delivered_again_with_no_task_stored_is_not_a_first_attempt() -> None:
    # Its earlier attempts stopped before their first durable change: they left no transition,
    # so a write they may have sent is looked for from the event's time on.
    task = new_task(a_run(), an_event(), runner="r2", now="2026-06-19T12:00:30+08:00", deliveries=3)
    assert task.attempts == 3
    assert earlier_attempts_began(task, event_at="2026-06-19T04:00:00+00:00") == "2026-06-19T04:00:00+00:00"
    # an event time that cannot be read, or a later one (a skewed clock): the task's creation
    assert earlier_attempts_began(task, event_at="not a time") == "2026-06-19T12:00:30+08:00"
    assert earlier_attempts_began(task, event_at="2026-06-19T12:00:31+08:00") == "2026-06-19T12:00:30+08:00"
    assert new_task(a_run(), an_event(), runner="r1", now="2026-06-19T12:00:30+08:00").attempts == 1


def test_the_step_an_approval_resumes_is_the_one_that_asked_for_it() -> None:
    task = record_steps(new_task(a_run(), an_event(), runner="r", now=NOW), [
        a_step("look", classification="ok"),
        a_step("book", side_effect="write", classification="needs_approval", approval_id="apr-2"),
    ], now=NOW)
    assert waiting_for_approval(task) is None  # still running
    waiting = transition(task, "awaiting_approval", by="r", now=NOW, approval_id="apr-2")
    step = waiting_for_approval(waiting)
    assert step is not None and step.id == "book"
    assert waiting_for_approval(msgspec.structs.replace(waiting, approval_id="apr-other")) is None


def _audited(**fields: object) -> AuditRecord:
    return AuditRecord(**{"call_id": "call-1", "at": "2026-01-01T00:00:05+00:00", "tool": "app.write",
                          "system": "app", "caller": "agent:helper", "status": "ok", **fields})


def test_a_write_recovered_from_the_audit_keeps_its_structured_result_for_later_steps() -> None:
    step = a_step("count", status="started", side_effect="write", call_id="call-1")
    recovered = from_audit(step, _audited(output_summary='{"order_id":"o-7","count":1}', approval_id="apr-1"))
    assert recovered.status == "finished" and recovered.classification == "ok"
    assert recovered.structured == {"order_id": "o-7", "count": 1}
    assert recovered.business_ids == {"order_id": "o-7"}
    assert recovered.finished_at == "2026-01-01T00:00:05+00:00" and recovered.approval_id == "apr-1"
    assert recovered.note is not None and "call-1" in recovered.note


@pytest.mark.parametrize("summary", ['{"key":"k","text":"long…', '[{"type":"text","text":"done"}]', ""])
def test_a_truncated_or_unstructured_audit_summary_is_kept_as_text_only(summary: str) -> None:
    recovered = from_audit(a_step(status="started", side_effect="write"), _audited(output_summary=summary))
    assert recovered.structured is None and recovered.text == (summary or None)


def test_a_failed_write_recovered_from_the_audit_keeps_its_error() -> None:
    recovered = from_audit(a_step(status="started", side_effect="write"),
                           _audited(status="business_error", error_code="rejected", error_message="no stock"))
    assert recovered.classification == "business_error"
    assert recovered.error is not None and (recovered.error.code, recovered.error.message) == ("rejected", "no stock")
