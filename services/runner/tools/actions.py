"""`request_action`: the one way an llm agent asks for an action outside its tools.

Only `interaction.requested` is executed — the question goes to the event's user through
`interactions.ask()`, the task waits, and the chosen value comes back as this tool call's
result when the answer resumes the run. Every other action is telemetry: an `action` step in
the log ("recorded, not executed"), and the model is told so.
"""

from __future__ import annotations

import json
from typing import Any

from services.runner.steps.results import truncate
from services.runner.tasks.interactions import EXECUTABLE_ACTION, label_of
from shared.clock import now_iso
from shared.contracts.task import TaskStep

TOOL_NAME = "request_action"
DESCRIPTION = (
    "Request a platform action. Only \"interaction.requested\" is carried out: it asks the user of the "
    "current conversation `question`, offering `options` to choose from, and returns the user's choice "
    "(the run waits for the answer). Any other action is recorded for the operators and not executed."
)
PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "action": {"type": "string", "description": "The action, e.g. \"interaction.requested\"."},
        "question": {"type": "string", "description": "For interaction.requested: what to ask the user."},
        "options": {"type": "array", "items": {"type": "string"},
                    "description": "For interaction.requested: the choices offered (numbered for the user)."},
    },
    "required": ["action"],
    "additionalProperties": False,
}
NOT_EXECUTED = "recorded, not executed"


def llm_descriptor() -> dict[str, Any]:
    return {"type": "function", "function": {"name": TOOL_NAME, "description": DESCRIPTION, "parameters": PARAMETERS}}


def telemetry_step(step_id: str, action: str, arguments: dict[str, Any]) -> TaskStep:
    at = now_iso()
    return TaskStep(id=step_id, kind="action", name=action[:200] or "?", status="finished", started_at=at,
                    finished_at=at, arguments=arguments, classification="ok", note=NOT_EXECUTED)


def telemetry_result(step: TaskStep) -> str:
    return json.dumps({"status": "recorded", "result": f"action {step.name!r} was {NOT_EXECUTED}: only "
                       f"{EXECUTABLE_ACTION!r} is carried out"}, ensure_ascii=False)


def answer_result(step: TaskStep, limit: int) -> str:
    """The answered interaction step as the model reads it: the user's choice."""
    asked = step.structured if isinstance(step.structured, dict) else {}
    body: dict[str, Any] = {"status": step.classification}
    if step.classification == "suppressed":
        body["result"] = "synthetic run: the question was not sent and nobody will answer"
    else:
        choice = asked.get("choice")
        body["result"] = {"answer": label_of(choice) if choice is not None else None, "choice": choice,
                          "value": asked.get("value"), "index": asked.get("index")}
    if step.error is not None:
        body["error"] = {"code": step.error.code, "message": step.error.message}
    return truncate(json.dumps(body, ensure_ascii=False, default=str), limit)
