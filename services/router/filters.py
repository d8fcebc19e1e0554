"""Binding filters compiled once into predicates over a validated event (pure, no I/O).

Semantics: a filter on an absent field fails, except `neq`, which is the negation of `eq`
(an event without an actor is "not a system actor"). Comparisons are type-exact for booleans
(`true` never equals `1`); numbers compare by value.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from shared.contracts.binding import BindingFilter
from shared.contracts.envelope import EventEnvelope
from shared.contracts.route import RouteCheck


class _Missing:
    def __repr__(self) -> str:
        return "<absent>"


MISSING: Final = _Missing()
Getter = Callable[[EventEnvelope], Any]

_FIXED: dict[str, Getter] = {
    "source.app": lambda e: e.header.source.app,
    "bot": lambda e: _present(e.payload.bot),
    "workspace": lambda e: _present(e.payload.workspace),
    "conversation": lambda e: _present(e.payload.conversation),
    "session_id": lambda e: _present(e.payload.session_id),
    "actor.id": lambda e: e.payload.actor.id if e.payload.actor else MISSING,
    "actor.kind": lambda e: e.payload.actor.kind if e.payload.actor else MISSING,
    "subject.kind": lambda e: e.payload.subject.kind if e.payload.subject else MISSING,
    "subject.id": lambda e: e.payload.subject.id if e.payload.subject else MISSING,
}


def _present(value: Any) -> Any:
    return MISSING if value is None else value


def getter_for(field: str) -> Getter:
    fixed = _FIXED.get(field)
    if fixed is not None:
        return fixed
    path = tuple(field.split(".")[1:])  # data.<path>

    def get(event: EventEnvelope) -> Any:
        current: Any = event.payload.data
        for segment in path:
            if isinstance(current, dict):
                current = current.get(segment, MISSING)
            # ASCII digits only: `²` is a digit that int() refuses (a crash found by fuzzing), and
            # `١` one that int() reads as 1 — neither is how a JSON path spells an index.
            elif isinstance(current, list) and segment.isascii() and segment.isdigit() and int(segment) < len(current):
                current = current[int(segment)]
            else:
                return MISSING
            if current is MISSING:
                return MISSING
        return current

    return get


def same(actual: Any, expected: Any) -> bool:
    if isinstance(actual, bool) or isinstance(expected, bool):
        return type(actual) is type(expected) and actual == expected
    return bool(actual == expected)


def _equals(value: Any) -> Callable[[Any], bool]:
    """`same(v, value)` specialised once per filter: the hot path runs it for every candidate."""
    if value is None or isinstance(value, bool):
        return lambda v: v is value
    if isinstance(value, str):
        return lambda v: v == value
    return lambda v: v == value and not isinstance(v, bool) and v is not MISSING


def _test_for(op: str, value: Any) -> Callable[[Any], bool]:
    if op == "eq":
        return _equals(value)
    if op == "neq":
        equals = _equals(value)
        return lambda v: not equals(v)
    if op == "in":
        options = tuple(value)
        if all(isinstance(option, str) for option in options):
            strings = frozenset(options)
            return lambda v: isinstance(v, str) and v in strings
        return lambda v: v is not MISSING and any(same(v, option) for option in options)
    if op == "contains":
        def contains(v: Any) -> bool:
            if isinstance(v, str):
                return isinstance(value, str) and value in v
            if isinstance(v, list):
                return any(same(item, value) for item in v)
            return False
        return contains
    if op == "starts_with":
        return lambda v: isinstance(v, str) and v.startswith(value)
    if op == "regex":
        pattern = re.compile(value)
        return lambda v: isinstance(v, str) and pattern.search(v) is not None
    raise ValueError(f"unknown filter op {op!r}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True, slots=True)
class CompiledFilter:
    number: int  # 1-based position in the binding, for explanations
    field: str
    op: str
    value: Any
    get: Getter
    test: Callable[[Any], bool]
    terse: str  # the failure reason without the value found, for the hot path's traces

    def holds(self, event: EventEnvelope) -> bool:
        return self.test(self.get(event))

    def check(self, event: EventEnvelope) -> RouteCheck:
        """The filter against the event, passed or not, with the value found (dry runs)."""
        actual = self.get(event)
        found = f"{self.field} is absent" if actual is MISSING else f"found {_short(actual)}"
        return RouteCheck(check=f"filter {self.number} ({self.field} {self.op} {_short(self.value)})",
                          passed=self.test(actual), detail=found)

    def failure(self, event: EventEnvelope) -> str | None:
        """None when the filter holds, else why it does not."""
        actual = self.get(event)
        if self.test(actual):
            return None
        found = f"{self.field} is absent" if actual is MISSING else f"found {_short(actual)}"
        return f"filter {self.number} ({self.field} {self.op} {_short(self.value)}) failed: {found}"


def compile_filter(number: int, spec: BindingFilter) -> CompiledFilter:
    return CompiledFilter(
        number=number, field=spec.field, op=spec.op, value=spec.value,
        get=getter_for(spec.field), test=_test_for(spec.op, spec.value),
        terse=f"filter {number} ({spec.field} {spec.op} {_short(spec.value)}) failed",
    )
