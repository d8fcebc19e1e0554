"""A playbook's `check` step: true → an `ok` verify step; false → `check_failed` with its message."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from services.runner.drivers.checks import check_step
from services.runner.errors import StepFailed
from shared.contracts.agent import PlaybookStep

CONTEXT: dict[str, Any] = {"steps": {"draft": {"structured": {"threshold": 90.0}},
                                     "readback": {"structured": {"rule": {"threshold": 90.0, "rule_id": "R-1"}}}}}


def step(expect: str, message: str | None = None) -> PlaybookStep:
    return PlaybookStep(id="compare", kind="check", expect=expect, message=message)


def test_a_check_that_holds_is_an_ok_verify_step() -> None:
    done = check_step(step("steps.readback.structured.rule.threshold == steps.draft.structured.threshold"),
                      "compare", CONTEXT)
    assert (done.kind, done.name, done.status, done.classification) == ("verify", "check", "finished", "ok")
    assert done.error is None and done.structured == {"expect": done.structured["expect"], "held": True}


def test_a_check_that_fails_says_its_message_rendered() -> None:
    done = check_step(step("steps.readback.structured.rule.threshold == 91", "rule {{ steps.readback.structured."
                           "rule.rule_id }} differs"), "compare", CONTEXT)
    assert done.classification == "business_error" and done.error is not None
    assert (done.error.code, done.error.message) == ("check_failed", "rule R-1 differs")
    plain = check_step(step("false"), "compare", CONTEXT)
    assert plain.error is not None and "does not hold" in plain.error.message


def test_a_check_naming_what_is_not_there_is_a_template_error() -> None:
    with pytest.raises(StepFailed) as raised:
        check_step(step("steps.nothing.structured.x == 1"), "compare", CONTEXT)
    assert raised.value.code == "template_error"


def test_a_check_step_says_what_it_expects() -> None:
    with pytest.raises(ValidationError, match="a check step says what to expect"):
        PlaybookStep(id="compare", kind="check")
