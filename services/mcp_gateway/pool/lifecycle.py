"""Tool lifecycle DRAFT → REVIEWING → PUBLISHED → DEPRECATED, with deterministic checks before
publishing. A refused move says every reason at once."""

from __future__ import annotations

import re
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from shared.contracts.system import System
from shared.contracts.tooldef import (
    TOOL_NAME_PATTERN,
    TRANSITIONS,
    HttpExecution,
    ReviewNote,
    ToolDefinition,
    ToolState,
)
from shared.errors import AuroraError

_TARGET: dict[str, ToolState] = {
    "review": "REVIEWING",
    "publish": "PUBLISHED",
    "deprecate": "DEPRECATED",
    "draft": "DRAFT",
}
_PLACEHOLDER = re.compile(r"\{([^}]+)\}")


class LifecycleError(AuroraError):
    """A lifecycle move was refused; `reasons` lists every problem."""

    def __init__(self, tool: str, action: str, reasons: list[str]) -> None:
        self.reasons = reasons
        super().__init__(f"cannot {action} {tool}: " + "; ".join(reasons))


def publish_problems(tool: ToolDefinition, system: System | None) -> list[str]:
    """Everything that keeps a tool from being published (empty when it may be)."""
    problems: list[str] = []
    if not re.fullmatch(TOOL_NAME_PATTERN, tool.name):
        problems.append(f"name {tool.name!r} must be dotted: <package>.<tool>, letters, digits, '_', '-'")
    problems += _schema_problems(tool.input_schema)
    if system is None:
        problems.append(f"system {tool.system!r} is not registered")
    if isinstance(tool.execution, HttpExecution):
        problems += _http_problems(tool, tool.execution, system)
    if not tool.description.strip():
        problems.append("description is empty: the model needs to know what the tool does")
    return problems


def _schema_problems(schema: dict[str, Any]) -> list[str]:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return [f"input_schema is not a valid JSON Schema: {exc.message}"]
    if schema.get("type") != "object":
        return ["input_schema must describe an object (type: object)"]
    return []


def _http_problems(tool: ToolDefinition, execution: HttpExecution, system: System | None) -> list[str]:
    problems: list[str] = []
    if system is not None and system.type != "http":
        problems.append(f"an http tool needs an http system; {system.name!r} is {system.type}")
    if system is not None and not system.base_url:
        problems.append(f"system {system.name!r} has no base_url")
    if not execution.path.startswith("/"):
        problems.append(f"execution.path {execution.path!r} must start with '/'")
    properties = set((tool.input_schema.get("properties") or {}).keys())
    required = set(tool.input_schema.get("required") or [])
    mapped = {p.name for p in execution.params} | ({execution.body_param} if execution.body_param else set())
    for name in sorted(required - mapped):
        problems.append(f"required parameter {name!r} is not mapped to the request")
    for name in sorted(mapped - properties):
        problems.append(f"mapping names {name!r}, which the input schema does not define")
    path_params = {p.name for p in execution.params if p.location == "path"}
    wire = {p.wire_name or p.name: p.name for p in execution.params if p.location == "path"}
    for placeholder in _PLACEHOLDER.findall(execution.path):
        if placeholder not in wire:
            problems.append(f"path placeholder {{{placeholder}}} has no path parameter")
    for name in sorted(path_params - required):
        problems.append(f"path parameter {name!r} must be required")
    return problems


def transition(
    tool: ToolDefinition, action: str, *, system: System | None, by: str, note: str, now: str
) -> ToolDefinition:
    """The tool after `action` (review, publish, deprecate, draft); LifecycleError otherwise."""
    if action not in TRANSITIONS:
        raise LifecycleError(tool.name, action, [f"unknown action: use one of {', '.join(TRANSITIONS)}"])
    reasons: list[str] = []
    if tool.state not in TRANSITIONS[action]:
        # No "; " inside a reason: LifecycleError joins the reasons with it, and clients split on it.
        reasons.append(f"the tool is {tool.state}: {action} applies to {' or '.join(TRANSITIONS[action])} only")
    if action == "publish":
        reasons += publish_problems(tool, system)
    if reasons:
        raise LifecycleError(tool.name, action, reasons)
    return tool.model_copy(
        update={
            "state": _TARGET[action],
            "notes": (*tool.notes, ReviewNote(at=now, by=by, action=action, note=note)),
            "changed_by": by,
            "changed_at": now,
        }
    )
