"""Event bindings: which saved rule routes an event to one pipeline or agent (or discards it).

A binding is validated completely when it is applied — pattern, every filter's field, operator,
value type and regular expression, and whether its target could ever accept the events it
matches — so a bad binding is refused with the reason instead of failing at routing time.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from shared.contracts.event_pattern import EventPattern, can_overlap
from shared.contracts.resource import ResourceId, ResourceModel

FilterOp = Literal["eq", "neq", "in", "contains", "starts_with", "regex"]
TargetType = Literal["pipeline", "agent", "discard"]

# Fields of the event a filter may read; `data.<path>` reads into the payload's data.
FIXED_FIELDS = (
    "source.app", "bot", "workspace", "conversation", "session_id",
    "actor.id", "actor.kind", "subject.kind", "subject.id",
)
ACTOR_KINDS = ("user", "system", "api")
PIPELINE_EVENTS = "message."  # pipelines accept `message.*` events only
MAX_REGEX = 512


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


class BindingFilter(ResourceModel):
    """`{field, op, value}`: one condition on the event; all of a binding's filters must hold."""

    field: Annotated[str, Field(min_length=1, max_length=256)]
    op: FilterOp
    value: Any = None

    @model_validator(mode="after")
    def _check(self) -> BindingFilter:
        fixed = self.field in FIXED_FIELDS
        if not fixed:
            segments = self.field.split(".")
            if segments[0] != "data" or len(segments) < 2 or not all(s.strip() for s in segments[1:]):
                raise ValueError(
                    f"unknown field {self.field!r}: use one of {', '.join(FIXED_FIELDS)} or data.<path>"
                )
        _check_value(self.field, self.op, self.value, fixed=fixed)
        return self


def _check_value(field: str, op: str, value: Any, *, fixed: bool) -> None:
    if op in ("starts_with", "regex"):
        if not isinstance(value, str) or not value:
            raise ValueError(f"value: op {op} needs a non-empty string")
        if op == "regex":
            if len(value) > MAX_REGEX:
                raise ValueError(f"value: regex longer than {MAX_REGEX} characters")
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"value: regex {value!r} does not compile: {exc}") from exc
        return
    values: list[Any]
    if op == "in":
        if not isinstance(value, list) or not value:
            raise ValueError("value: op in needs a non-empty list")
        values = value
    else:
        values = [value]
    for item in values:
        if not _is_scalar(item):
            raise ValueError(f"value: op {op} compares with a string, number, boolean or null, not {item!r}")
        if fixed and not isinstance(item, str):
            raise ValueError(f"value: field {field} is a string: compare it with a string, not {item!r}")
        if field == "actor.kind" and op in ("eq", "neq", "in") and item not in ACTOR_KINDS:
            raise ValueError(f"value: actor.kind is one of {', '.join(ACTOR_KINDS)}, never {item!r}")


class Binding(ResourceModel):
    """A saved routing rule (`kind: Binding`)."""

    kind: Literal["Binding"] = "Binding"
    id: ResourceId
    event_pattern: EventPattern
    filters: tuple[BindingFilter, ...] = ()
    target_type: TargetType
    target_id: ResourceId | None = None
    priority: Annotated[int, Field(ge=-1_000_000, le=1_000_000)] = 0
    enabled: bool = True
    description: Annotated[str, Field(max_length=2000)] = ""

    @model_validator(mode="after")
    def _check_target(self) -> Binding:
        if self.target_type == "discard":
            if self.target_id is not None:
                raise ValueError("target_type discard takes no target_id")
            return self
        if self.target_id is None:
            raise ValueError(f"target_type {self.target_type} needs a target_id")
        if self.target_type == "pipeline" and not can_overlap(self.event_pattern, PIPELINE_EVENTS):
            raise ValueError(
                f"pipelines accept only message.* events; event_pattern {self.event_pattern!r} "
                "can never match one (bind an agent instead)"
            )
        return self
