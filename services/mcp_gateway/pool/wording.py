"""A reviewer's wording for a tool (`tools.edit`): the edit itself, and how it survives a re-sync (pure).

Only wording changes: the description and the parameters' descriptions. A unit is written into
its parameter's description, `(unit: ms)`, because that is where the pool keeps units: the
import's findings look for one there and the model reads it there. The edit is kept on the
definition as `edited`, an override that the MCP sync and an OpenAPI re-import apply to what
they discover, so a re-list never takes back a reviewer's words; when the app changes the schema
itself the usual re-review still happens (pool/registry.py `changed_by_app`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from shared.contracts.tooldef import ReviewNote, ToolDefinition, WordingEdit
from shared.errors import AuroraError

EDITABLE = ("DRAFT", "REVIEWING")
PARTS = ("description", "params", "units")  # what `--only` may take of a suggestion
_UNIT_SUFFIX = re.compile(r"\s*\(unit: [^()]*\)\s*$")


class EditError(AuroraError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class EditRequest:
    """What a reviewer asks for; explicit wording wins over the suggestion's."""

    description: str | None = None
    parameters: Mapping[str, str] = field(default_factory=dict)
    units: Mapping[str, str] = field(default_factory=dict)
    from_suggestion: bool = False
    only: tuple[str, ...] = PARTS
    note: str = ""


def with_unit(text: str, unit: str) -> str:
    """The description with its unit at the end, replacing a unit written there before."""
    base = _UNIT_SUFFIX.sub("", text).strip()
    return f"{base} (unit: {unit})" if base else f"(unit: {unit})"


def apply_wording(tool: ToolDefinition, edit: WordingEdit | None) -> ToolDefinition:
    """`tool` (as its source describes it) with the reviewer's wording over it. A parameter the
    schema no longer has is left out; findings about what the reviewer worded are dropped."""
    if edit is None:
        return tool
    properties: dict[str, Any] = dict(tool.input_schema.get("properties") or {})
    worded = [name for name in edit.parameters if isinstance(properties.get(name), dict)]
    for name in worded:
        properties[name] = {**properties[name], "description": edit.parameters[name]}
    schema = {**tool.input_schema, "properties": properties} if worded else tool.input_schema
    missing = tuple(item for item in tool.missing
                    if not (edit.description is not None and item.startswith("description:"))
                    and not any(item.startswith(f"input `{name}` ") for name in worded))
    return tool.model_copy(update={"description": tool.description if edit.description is None else edit.description,
                                   "input_schema": schema, "missing": missing})


def _requested(tool: ToolDefinition, request: EditRequest) -> tuple[str | None, dict[str, str], dict[str, str]]:
    """(description, parameter descriptions, units) asked for: the suggestion's parts, then the flags."""
    description, parameters, units = None, {}, {}
    if request.from_suggestion:
        suggestion = tool.suggestion
        if suggestion is None:
            raise EditError("no_suggestion", f"{tool.name} has no suggestion to take (aurora tools suggest "
                            f"{tool.name} first)")
        if suggestion.for_version is not None and suggestion.for_version != tool.version:
            raise EditError("stale_suggestion", f"the suggestion was made for version {suggestion.for_version} of "
                            f"{tool.name}, which is now at version {tool.version}: ask again (aurora tools suggest "
                            f"{tool.name}) or edit by hand")
        unknown_parts = sorted(set(request.only) - set(PARTS))
        if unknown_parts:
            raise EditError("invalid_request", f"--only takes {', '.join(PARTS)}; not {', '.join(unknown_parts)}")
        if "description" in request.only and suggestion.description:
            description = suggestion.description
        if "params" in request.only:
            parameters.update(suggestion.parameters)
        if "units" in request.only:
            units.update(suggestion.units)
    if request.description is not None:
        description = request.description
    parameters.update(request.parameters)
    units.update(request.units)
    return description, parameters, units


def edit_tool(tool: ToolDefinition, request: EditRequest, *, by: str, now: str) -> ToolDefinition:
    """The tool with the reviewer's wording, its version bumped, a note saying who and from what,
    the suggestion cleared when taken. EditError naming what to fix otherwise."""
    if tool.state not in EDITABLE:
        raise EditError("not_a_draft", f"{tool.name} is {tool.state}: only a tool in {' or '.join(EDITABLE)} is "
                        f"edited (aurora tools draft {tool.name} first)")
    description, parameters, units = _requested(tool, request)
    properties: dict[str, Any] = dict(tool.input_schema.get("properties") or {})
    unknown = sorted((set(parameters) | set(units)) - set(properties))
    if unknown:
        raise EditError("unknown_parameter", f"{tool.name} has no parameter {', '.join(map(repr, unknown))}; "
                        f"its parameters: {', '.join(properties) or '(none)'}")
    blank = sorted(name for name, text in {**parameters, **units}.items() if not text.strip())
    if description is not None and not description.strip():
        blank.insert(0, "the description")
    if blank:
        raise EditError("invalid_request", f"empty wording for {', '.join(blank)}: give the text to use")
    old = {name: str(spec.get("description") or "") if isinstance(spec, dict) else ""
           for name, spec in properties.items()}
    texts: dict[str, str] = {}
    for name in sorted(set(parameters) | set(units)):
        text = parameters.get(name, old[name]).strip()
        texts[name] = with_unit(text, units[name].strip()) if name in units else text
    before = tool.edited
    model = tool.suggestion.model if request.from_suggestion and tool.suggestion else None
    edit = WordingEdit(
        description=description.strip() if description is not None else (before.description if before else None),
        parameters={**(before.parameters if before else {}), **texts},
        by=by, at=now, version=tool.version + 1, from_model=model or (before.from_model if before else None))
    edited = apply_wording(tool, edit)
    if (edited.description, edited.input_schema) == (tool.description, tool.input_schema):
        raise EditError("unchanged", f"the edit changes nothing of {tool.name}'s wording")
    changed = (["description"] if edited.description != tool.description else []) + [
        name for name in texts if old[name] != texts[name]]
    note = f"edited by {by}: {', '.join(changed)}" + (f"; from suggestion of model {model}" if model else "")
    if request.note:
        note += f"; {request.note}"
    return edited.model_copy(update={
        "edited": edit, "version": tool.version + 1, "changed_by": by, "changed_at": now,
        "suggestion": None if request.from_suggestion else tool.suggestion,
        "notes": (*tool.notes, ReviewNote(at=now, by=by, action="edited", note=note)),
    })
