"""Every filter op over every kind of field, including absent fields and type-exact booleans."""

from __future__ import annotations

from typing import Any

import pytest

from services.router.filters import CompiledFilter, compile_filter
from shared.contracts.binding import BindingFilter
from shared.contracts.resource import parse_resource
from tests.unit.router.factories import event

EVENT = event(
    "message.received", app="im.polaris.qq", session_id="group_42", bot="b1", workspace="w1",
    conversation="c1", actor={"id": "u-7", "kind": "user"}, subject={"kind": "message", "id": "m9"},
    data={"text": "你好 world", "lang": "zh", "count": 3, "vip": True, "tags": ["a", "b"],
          "user": {"level": 2, "name": "Ann"}, "items": [{"sku": "x1"}], "nothing": None},
)
BARE = event("schedule.triggered")  # no actor, subject, bot … and empty data

CASES: list[tuple[str, str, Any, bool]] = [
    ("source.app", "eq", "im.polaris.qq", True),
    ("source.app", "eq", "im.polaris.wx", False),
    ("bot", "eq", "b1", True),
    ("workspace", "neq", "w2", True),
    ("workspace", "neq", "w1", False),
    ("conversation", "in", ["c0", "c1"], True),
    ("conversation", "in", ["c0"], False),
    ("session_id", "starts_with", "group_", True),
    ("session_id", "starts_with", "private_", False),
    ("actor.id", "regex", r"^u-\d+$", True),
    ("actor.id", "regex", r"^bot-", False),
    ("actor.kind", "eq", "user", True),
    ("actor.kind", "in", ["system", "api"], False),
    ("subject.kind", "eq", "message", True),
    ("subject.id", "contains", "9", True),
    ("subject.id", "contains", "8", False),
    ("data.text", "contains", "你好", True),
    ("data.text", "regex", "(?i)WORLD", True),
    ("data.lang", "eq", "zh", True),
    ("data.count", "eq", 3, True),
    ("data.count", "eq", 3.0, True),  # numbers compare by value
    ("data.count", "eq", "3", False),  # … but never across types
    ("data.count", "in", [1, 2, 3], True),
    ("data.vip", "eq", True, True),
    ("data.vip", "eq", 1, False),  # a boolean is not a number
    ("data.count", "eq", True, False),
    ("data.tags", "contains", "b", True),
    ("data.tags", "contains", "c", False),
    ("data.user.level", "eq", 2, True),
    ("data.user.name", "starts_with", "An", True),
    ("data.items.0.sku", "eq", "x1", True),
    ("data.items.1.sku", "eq", "x1", False),
    ("data.nothing", "eq", None, True),
    ("data.missing", "eq", None, False),  # absent is not null
    ("data.missing", "neq", "x", True),  # neq is the negation of eq
    ("data.count", "starts_with", "3", False),  # string ops need a string
    ("data.count", "regex", "3", False),
]


@pytest.mark.parametrize(("field", "op", "value", "expected"), CASES,
                         ids=[f"{f}-{o}-{v!r}" for f, o, v, _ in CASES])
def test_filter_op(field: str, op: str, value: Any, expected: bool) -> None:
    spec = parse_resource_filter(field, op, value)
    assert (spec.failure(EVENT) is None) is expected, spec.failure(EVENT)


@pytest.mark.parametrize("field", ["bot", "workspace", "conversation", "session_id", "actor.id",
                                   "actor.kind", "subject.kind", "subject.id", "data.text"])
def test_absent_fields_fail_every_op_but_neq(field: str) -> None:
    value = "user" if field == "actor.kind" else "x"
    for op, operand in (("eq", value), ("in", [value]), ("contains", value),
                        ("starts_with", value), ("regex", value)):
        reason = parse_resource_filter(field, op, operand).failure(BARE)
        assert reason is not None and "is absent" in reason
    assert parse_resource_filter(field, "neq", value).failure(BARE) is None


def parse_resource_filter(field: str, op: str, value: Any) -> CompiledFilter:
    return compile_filter(1, parse_resource(BindingFilter, {"field": field, "op": op, "value": value}))


def test_reason_names_the_filter_and_what_was_found() -> None:
    spec = parse_resource_filter("data.user.level", "eq", 5)
    assert spec.failure(EVENT) == "filter 1 (data.user.level eq 5) failed: found 2"


def test_parse_resource_gives_filters() -> None:
    from shared.contracts.binding import Binding

    b = parse_resource(Binding, {"id": "x", "event_pattern": "*", "target_type": "discard",
                                 "filters": [{"field": "bot", "op": "eq", "value": "b"}]})
    assert b.filters[0].field == "bot"
