"""Playbook templates: JSON types preserved for a lone expression, strict about what is missing,
sandboxed."""

from __future__ import annotations

from typing import Any

import pytest

from services.runner.drivers.templating import TemplateFailed, evaluate, render_text, render_value, truthy

CONTEXT: dict[str, Any] = {
    "event": {"data": {"n": 3, "ratio": 1.0, "flag": False, "none": None, "tags": ["a", "b"],
                       "nested": {"k": [1, {"x": "y"}]}, "text": "北京"}},
    "steps": {"search": {"ok": True, "structured": {"items": [{"assetCode": "AS-1"}], "count": 1, "keys": "k"}},
              "skipped": {"ok": False, "skipped": True, "structured": None}},
}


@pytest.mark.parametrize(("template", "expected"), [
    ("{{ event.data.n }}", 3),
    ("{{ event.data.ratio }}", 1.0),
    ("{{ event.data.flag }}", False),
    ("{{ event.data.none }}", None),
    ("{{ event.data.tags }}", ["a", "b"]),
    ("{{ event.data.nested }}", {"k": [1, {"x": "y"}]}),
    ("  {{ event.data.n + 1 }}  ", 4),
    ("{{ steps.search.structured.items[0].assetCode }}", "AS-1"),
    ("{{ steps.search.structured['items'] | length }}", 1),
    ("{{ event.data.text }}", "北京"),
])
def test_a_lone_expression_keeps_its_json_type(template: str, expected: Any) -> None:
    value = render_value(template, CONTEXT, where="t")
    assert value == expected and type(value) is type(expected)


def test_text_around_an_expression_makes_a_string() -> None:
    assert render_value("n={{ event.data.n }}", CONTEXT, where="t") == "n=3"
    assert render_value("{{ event.data.n }}{{ event.data.n }}", CONTEXT, where="t") == "33"
    assert render_value("{% if event.data.flag %}y{% else %}n{% endif %}", CONTEXT, where="t") == "n"


def test_structures_are_rendered_value_by_value_and_other_values_pass_unchanged() -> None:
    rendered = render_value({"a": "{{ event.data.n }}", "b": ["x {{ event.data.n }}", 2.5, True, None],
                             "c": {"d": "plain"}}, CONTEXT, where="args")
    assert rendered == {"a": 3, "b": ["x 3", 2.5, True, None], "c": {"d": "plain"}}


def test_json_keys_win_over_dict_methods() -> None:
    assert render_value("{{ steps.search.structured.items[0].assetCode }}", CONTEXT, where="t") == "AS-1"
    assert render_value("{{ steps.search.structured.keys }}", CONTEXT, where="t") == "k"


@pytest.mark.parametrize("template", [
    "{{ event.data.missing }}", "x {{ event.data.missing }}", "{{ steps.nope.structured }}",
    "{{ steps.skipped.structured.items }}",
])
def test_anything_missing_is_an_error_naming_where(template: str) -> None:
    with pytest.raises(TemplateFailed, match=r"^args\.q: "):
        render_value({"q": template}, CONTEXT, where="args")


@pytest.mark.parametrize("template", [
    "{{ event.__class__ }}", "{{ event.data.tags.__class__.__mro__ }}", "{{ ''.__class__.__subclasses__() }}",
])
def test_the_sandbox_refuses_python_internals(template: str) -> None:
    with pytest.raises(TemplateFailed, match="unsafe"):
        render_value(template, CONTEXT, where="t")


def test_a_value_that_is_not_json_data_is_refused() -> None:
    with pytest.raises(TemplateFailed, match="not JSON data"):
        render_value("{{ event.data.items() }}", CONTEXT, where="t")


def test_syntax_and_runtime_errors_are_template_errors() -> None:
    with pytest.raises(TemplateFailed):
        render_text("{{ broken(", CONTEXT, where="answer")
    with pytest.raises(TemplateFailed, match="ZeroDivisionError"):
        evaluate("1 / 0", CONTEXT, where="when")


@pytest.mark.parametrize(("expression", "expected"), [
    ("steps.search.structured.count > 0", True),
    ("{{ steps.search.structured.count > 0 }}", True),
    ("steps.skipped.ok", False),
    ("event.data.tags | length == 2 and not event.data.flag", True),
    ("event.data.none is none", True),
])
def test_conditions(expression: str, expected: bool) -> None:
    assert truthy(expression, CONTEXT, where="when") is expected
