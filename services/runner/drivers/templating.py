"""Templates of playbooks and pipelines: Jinja2, sandboxed, strict about undefined names.

A string that is exactly one expression, `{{ steps.search.structured.items[0].code }}`, yields
that value with its JSON type (an integer stays an integer, a list a list); any other string is
rendered as text. Dicts and lists are rendered value by value; other JSON values pass unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from jinja2 import StrictUndefined, TemplateError, Undefined
from jinja2.sandbox import SandboxedEnvironment

from shared.errors import AuroraError

_ONE_EXPRESSION = re.compile(r"^\s*\{\{(?P<expr>.*?)\}\}\s*$", re.DOTALL)


class TemplateFailed(AuroraError):
    """A template could not be compiled or rendered; the message says where and why."""


class _DataFirst(SandboxedEnvironment):
    """`x.items` means the key `items` of JSON data, not the dict method of the same name."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, dict) and attribute in obj:
            return obj[attribute]
        return super().getattr(obj, attribute)


def _environment() -> SandboxedEnvironment:
    env = _DataFirst(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
    env.filters["json"] = lambda value: json.dumps(value, ensure_ascii=False, default=str)
    return env


_ENV = _environment()


@lru_cache(maxsize=2048)
def _expression(source: str) -> Any:
    return _ENV.compile_expression(source, undefined_to_none=False)


@lru_cache(maxsize=2048)
def _template(source: str) -> Any:
    return _ENV.from_string(source)


def _single_expression(text: str) -> str | None:
    match = _ONE_EXPRESSION.match(text)
    if match is None:
        return None
    inner = match.group("expr")
    if "{{" in inner or "}}" in inner or "{%" in text or "{#" in text:
        return None
    return inner.strip()


def _native(value: Any, where: str) -> Any:
    """A rendered expression's value as plain JSON data; Undefined and other objects refused."""
    if isinstance(value, Undefined):
        str(value)  # StrictUndefined raises UndefinedError, naming what is missing
        raise TemplateFailed(f"{where}: the expression is undefined")
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _native(v, where) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_native(v, where) for v in value]
    raise TemplateFailed(f"{where}: the expression gives a {type(value).__name__}, not JSON data")


def evaluate(expression: str, context: Mapping[str, Any], *, where: str) -> Any:
    """The value of one expression (`{{ … }}` around it is optional)."""
    source = _single_expression(expression) or expression.strip()
    try:
        return _native(_expression(source)(**context), where)
    except TemplateFailed:
        raise
    except TemplateError as exc:
        raise TemplateFailed(f"{where}: {exc}") from exc
    except Exception as exc:  # an expression may raise anything (a bad index, a division by zero …)
        raise TemplateFailed(f"{where}: {type(exc).__name__}: {exc}") from exc


def truthy(expression: str, context: Mapping[str, Any], *, where: str) -> bool:
    return bool(evaluate(expression, context, where=where))


def render_text(template: str, context: Mapping[str, Any], *, where: str) -> str:
    try:
        return str(_template(template).render(**context))
    except TemplateError as exc:
        raise TemplateFailed(f"{where}: {exc}") from exc
    except Exception as exc:
        raise TemplateFailed(f"{where}: {type(exc).__name__}: {exc}") from exc


def render_value(value: Any, context: Mapping[str, Any], *, where: str) -> Any:
    """Render every string inside `value`; a string that is one expression keeps its type."""
    if isinstance(value, str):
        if "{{" not in value and "{%" not in value:
            return value
        expression = _single_expression(value)
        if expression is not None:
            return evaluate(expression, context, where=where)
        return render_text(value, context, where=where)
    if isinstance(value, Mapping):
        return {key: render_value(item, context, where=f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [render_value(item, context, where=f"{where}[{i}]") for i, item in enumerate(value)]
    return value
