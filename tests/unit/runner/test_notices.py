"""What the user is told of a task that ended unverified or partial, and when an llm run is partial."""

from __future__ import annotations

from typing import Any

import msgspec

from services.runner.notices import done_writes, in_doubt, partial_notice, unfinished_writes, unverified_notice
from shared.contracts.task import TaskStep
from tests.unit.runner.factories import a_step as _a_step


def a_step(step_id: str, *, name: str, side_effect: str = "read", **extra: Any) -> TaskStep:
    return msgspec.structs.replace(_a_step(step_id, side_effect=side_effect, **extra), name=name)


READ = a_step("device", name="demo.find_device", classification="ok")
SAVED = a_step("save", name="demo.save_rule", side_effect="write", classification="ok",
               business_ids={"rule_id": "RULE-0007"})
LOST = a_step("save", name="demo.save_rule", side_effect="write", classification="outcome_unknown")
ENABLE_FAILED = a_step("enable", name="demo.enable_rule", side_effect="write", classification="tool_error")
ENABLED = a_step("enable2", name="demo.enable_rule", side_effect="write", classification="ok")


def test_only_writes_that_succeeded_count_as_done_with_their_business_ids() -> None:
    assert done_writes([READ, SAVED, ENABLE_FAILED]) == ["demo.save_rule (rule_id RULE-0007)"]


def test_the_unverified_notice_names_the_write_in_doubt_what_was_done_and_what_to_check() -> None:
    check = "check whether demo.save_rule was carried out with arguments {} (…): lost; it was not repeated"
    notice = unverified_notice([READ, LOST], check)
    assert in_doubt([READ, LOST]) is LOST
    assert notice.startswith("Unverified: I cannot tell whether demo.save_rule was carried out")
    assert "Done: no change was confirmed." in notice and "Not confirmed: demo.save_rule." in notice
    assert notice.endswith(f"Please {check}.")


def test_the_partial_notice_says_what_is_saved_and_what_is_not() -> None:
    notice = partial_notice([READ, SAVED, ENABLE_FAILED], "step enable (demo.enable_rule) ended tool_error: busy")
    assert "Done: demo.save_rule (rule_id RULE-0007)." in notice
    assert "Not done: step enable (demo.enable_rule) ended tool_error: busy" in notice


def test_a_failed_write_after_a_successful_one_is_unfinished_unless_a_later_call_made_it_good() -> None:
    assert unfinished_writes([READ, SAVED, ENABLE_FAILED]) == [ENABLE_FAILED]
    assert unfinished_writes([READ, SAVED, ENABLE_FAILED, ENABLED]) == []
    # nothing changed at all: not partial (the run failed to write, and its answer says so)
    assert unfinished_writes([READ, ENABLE_FAILED]) == []
    # waiting for an approval is not a failure
    waiting = a_step("enable", name="demo.enable_rule", side_effect="write", classification="needs_approval")
    assert unfinished_writes([SAVED, waiting]) == []
