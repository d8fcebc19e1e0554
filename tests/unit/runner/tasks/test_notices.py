"""What the user is told of a task that ended without an answer of its own (unverified, partial,
refused, cancelled, failed having changed nothing), and when an llm run is partial."""

from __future__ import annotations

from typing import Any

import msgspec

from services.runner.tasks.notices import (
    cancelled_notice,
    done_writes,
    failed_notice,
    in_doubt,
    partial_notice,
    refused_notice,
    unfinished_writes,
    unverified_notice,
)
from shared.contracts.task import StepError, TaskStep
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


def test_the_unverified_notice_is_one_short_sentence_naming_the_write_in_doubt() -> None:
    assert in_doubt([READ, LOST]) is LOST
    assert unverified_notice([READ, LOST]) == ("无法确认 demo.save_rule 是否已执行（响应丢失，且没有重试），"
                                               "请先到该系统核对，再决定是否重新提出。")
    assert unverified_notice([READ, LOST], locale="en") == (
        "I cannot confirm that demo.save_rule was carried out (its answer was lost, and it was not repeated): "
        "please check in that system before asking again.")


def test_the_partial_notice_says_what_is_saved_and_what_is_not_without_the_apps_error() -> None:
    failed = msgspec.structs.replace(ENABLE_FAILED, error=StepError(code="tool_error", message="Error executing "
                                                                    "tool enable_rule: rule engine busy"))
    notice = partial_notice([READ, SAVED, failed])
    assert notice == ("部分完成。已完成：demo.save_rule (rule_id RULE-0007)。未完成：demo.enable_rule及其后的步骤。"
                      "请检查该系统后重新提出，或手动完成剩余部分。")
    english = partial_notice([READ, SAVED, failed], locale="en")
    assert english.startswith("Partly done. Done: demo.save_rule (rule_id RULE-0007). Not done: demo.enable_rule,")
    assert "Error" not in notice + english and "busy" not in notice + english  # the error stays in the task


def test_a_failed_write_after_a_successful_one_is_unfinished_unless_a_later_call_made_it_good() -> None:
    assert unfinished_writes([READ, SAVED, ENABLE_FAILED]) == [ENABLE_FAILED]
    assert unfinished_writes([READ, SAVED, ENABLE_FAILED, ENABLED]) == []
    # nothing changed at all: not partial (the run failed to write, and its answer says so)
    assert unfinished_writes([READ, ENABLE_FAILED]) == []
    # waiting for an approval is not a failure
    waiting = a_step("enable", name="demo.enable_rule", side_effect="write", classification="needs_approval")
    assert unfinished_writes([SAVED, waiting]) == []


def test_a_refused_a_cancelled_and_a_failed_task_are_each_one_sentence_in_the_agents_language() -> None:
    assert refused_notice("denied") == "未执行：此请求所需的审批被拒绝，因此没有做任何更改。"
    assert refused_notice("expired") == "未执行：审批超时，没有人及时批准，因此没有做任何更改。"
    assert refused_notice("expired", locale="en") == (
        "Not done: nobody approved this request in time, so nothing was changed.")
    assert cancelled_notice() == "此请求在完成前已被取消。"
    assert cancelled_notice(locale="en") == "This request was cancelled before it was finished."
    assert failed_notice() == "抱歉，此请求未能完成，没有做任何更改。"
    assert failed_notice(locale="en") == "Sorry, this request could not be done; nothing was changed."
