"""A playbook's `check` step: an expression over the results so far that must hold — e.g. a
rule read back equals the draft that was approved — and stops the run, saying `message`, when
it does not. Pure: nothing is called, so a resumed run simply evaluates it again.

It is recorded as a `verify` step named `check` (a read-back comparison, repeatable), `ok`
when the expression is true and `business_error` (code `check_failed`) when it is false.
"""

from __future__ import annotations

from typing import Any

from services.runner.drivers.templating import TemplateFailed, render_text, truthy
from services.runner.errors import StepFailed
from shared.clock import now_iso
from shared.contracts.agent import PlaybookStep
from shared.contracts.task import StepError, TaskStep

CHECK = "check"


def check_step(step: PlaybookStep, step_id: str, context: dict[str, Any]) -> TaskStep:
    assert step.expect is not None
    try:
        held = truthy(step.expect, context, where=f"step {step.id} expect")
        message = render_text(step.message, context, where=f"step {step.id} message") if step.message else \
            f"the check {step.expect!r} does not hold"
    except TemplateFailed as exc:
        raise StepFailed("template_error", str(exc)) from exc
    now = now_iso()
    return TaskStep(
        id=step_id, kind="verify", name=CHECK, status="finished", started_at=now, finished_at=now,
        classification="ok" if held else "business_error", side_effect="read",
        structured={"expect": step.expect, "held": held}, text=None if held else message,
        error=None if held else StepError(code="check_failed", message=message),
    )
