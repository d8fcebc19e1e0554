"""The call ledger's pure rules: what a call asked again gets, and its KV keys."""

from __future__ import annotations

import msgspec
import pytest

from services.mcp_gateway.calls.ledger_rules import LedgerEntry, answer_for, digest_of, judge, ledger_key
from shared.contracts.toolcall import ToolCallContext, ToolCallRequest, ToolCallResult

REQUEST = ToolCallRequest(tool="chat.send_message", context=ToolCallContext(run_id="r1", task_id="r1"))
DONE = ToolCallResult(status="ok", structured={"message_id": "m1"}, side_effect="write")


def entry(**fields: object) -> LedgerEntry:
    base: dict[str, object] = {"state": "executing", "owner": "gw-1", "tool": "chat.send_message", "run_id": "r1",
                               "task_id": "r1", "deduplicates": False, "target": "chat",
                               "started_at": "2026-12-01T00:00:00+00:00", "deadline": 100.0}
    return LedgerEntry(**{**base, **fields})  # type: ignore[arg-type]


@pytest.mark.parametrize(("fields", "alive", "now", "verdict"), [
    ({"state": "done", "result": DONE}, False, 0.0, "done"),
    ({}, True, 50.0, "in_progress"),
    ({}, True, 150.0, "in_doubt"),  # alive, but past the deadline: its write of the result was lost
    ({}, False, 50.0, "in_doubt"),
    ({"deduplicates": True}, False, 50.0, "resend"),
    ({"deduplicates": True}, True, 50.0, "in_progress"),
    ({"tool": "chat.react"}, True, 50.0, "conflict"),
    ({"run_id": "r2", "state": "done", "result": DONE}, True, 50.0, "conflict"),
])
def test_what_a_call_asked_again_gets(fields: dict[str, object], alive: bool, now: float, verdict: str) -> None:
    assert judge(entry(**fields), REQUEST, owner_alive=alive, now=now) == verdict


def test_the_answers_say_what_happened() -> None:
    assert answer_for("done", entry(state="done", result=DONE), "c1") == DONE
    doubt = answer_for("in_doubt", entry(), "c1")
    assert doubt.status == "outcome_unknown" and doubt.error is not None and doubt.error.code == "call_in_doubt"
    assert "c1" in doubt.error.message and "chat" in doubt.error.message
    busy = answer_for("in_progress", entry(), "c1")
    assert busy.error is not None and busy.error.code == "call_in_progress"
    reused = answer_for("conflict", entry(), "c1")
    assert reused.status == "denied" and reused.error is not None and reused.error.code == "call_id_reused"


def asking(**arguments: object) -> ToolCallRequest:
    return ToolCallRequest(tool="chat.send_message", arguments=arguments, context=REQUEST.context)


def test_a_call_asked_again_with_other_arguments_is_another_call() -> None:
    sent = asking(text="pump 3 is at 4 bar", to={"room": "ops", "thread": "t1"})
    again = asking(to={"thread": "t1", "room": "ops"}, text="pump 3 is at 4 bar")  # the same, keys in another order
    other = asking(text="pump 3 is at 5 bar", to={"room": "ops", "thread": "t1"})
    assert digest_of(sent) == digest_of(again) != digest_of(other)
    recorded = entry(state="done", result=DONE, arguments_digest=digest_of(sent))
    assert judge(recorded, again, owner_alive=True, now=50.0) == "done"
    assert judge(recorded, other, owner_alive=True, now=50.0) == "conflict"
    assert judge(entry(arguments_digest=digest_of(sent)), other, owner_alive=False, now=50.0) == "conflict"
    # An entry written before digests were kept is judged as before: by tool, run and task.
    assert judge(entry(state="done", result=DONE), other, owner_alive=True, now=50.0) == "done"
    reused = answer_for("conflict", recorded, "c1", other)
    assert reused.status == "denied" and reused.error is not None and reused.error.code == "call_id_reused"
    assert "other arguments" in reused.error.message and "not sent again" in reused.error.message
    elsewhere = answer_for("conflict", recorded, "c1", msgspec.structs.replace(
        other, context=ToolCallContext(run_id="r2", task_id="r2")))
    assert elsewhere.error is not None and "other arguments" not in elsewhere.error.message


def test_any_call_id_makes_a_valid_key() -> None:
    assert ledger_key("5d1c9f0e-7b2a-4e61") == "calls.5d1c9f0e-7b2a-4e61"
    odd = ledger_key("op call: 1/2 *")
    assert odd.startswith("calls.h-") and len(odd) == len("calls.h-") + 64
    assert ledger_key("op call: 1/2 *") == odd
