"""An app's form-mode `elicitation/create` as a chat question, and a chat answer as its result (pure).

MCP's form mode asks for a flat object of primitive fields (string with length and `format`,
number/integer with bounds, boolean, single-select enum as `enum` or `oneOf` const/title,
multi-select as an `array` of such an enum). A chat page has no form, so the schema becomes a
numbered list of the fields and the user answers in text: one line per field (`2: 42`,
`age: 42`; `|` or `;` also separate fields, for a one-line answer box), or a JSON object; a
form of one field takes the whole answer as its value; an enum takes an option's number or
label. `decline` declines, `cancel` cancels.

`parse_answer` checks the answer against the requested schema and says, field by field, what
to fix: the gateway sends that back and keeps waiting, so a typo is not the app's problem.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal

from shared.i18n import N_, say

Content = dict[str, str | int | float | bool | list[str] | None]
DECLINE = ("decline", "refuse", "拒绝")
CANCEL = ("cancel", "取消")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_TRUE = ("true", "yes", "y", "1", "是", "对")
_FALSE = ("false", "no", "n", "0", "否", "不是")
# A field's kind as the question names it (message ids: see shared/i18n)
_KINDS = {"string": N_("text"), "number": N_("a number"), "integer": N_("a whole number"),
          "boolean": N_("yes or no")}


class UnsupportedSchema(ValueError):
    """The requested schema is outside MCP's form-mode subset (nested objects, unknown types)."""


@dataclass(frozen=True)
class Field:
    name: str
    kind: Literal["string", "number", "integer", "boolean", "enum", "multi"]
    title: str
    description: str
    required: bool
    options: tuple[tuple[str, str], ...] = ()  # (value, label) for enum / multi
    schema: dict[str, Any] | None = None


@dataclass(frozen=True)
class Answer:
    action: Literal["accept", "decline", "cancel"]
    content: Content | None = None


def fields_of(schema: dict[str, Any]) -> list[Field]:
    """The form's fields in the schema's order; UnsupportedSchema naming the field otherwise."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise UnsupportedSchema("the requested schema must be an object of fields")
    properties = schema.get("properties") or {}
    if not isinstance(properties, dict):
        raise UnsupportedSchema("the requested schema's `properties` must be an object")
    required = set(schema.get("required") or ())
    return [_field(name, spec, name in required) for name, spec in properties.items()]


def _field(name: str, spec: Any, required: bool) -> Field:
    if not isinstance(spec, dict):
        raise UnsupportedSchema(f"field {name!r}: its schema must be an object")
    title, description = str(spec.get("title") or name), str(spec.get("description") or "")
    kind = spec.get("type")
    options = _options(spec)
    if kind == "array":
        items = spec.get("items")
        choices = _options(items) if isinstance(items, dict) else ()
        if not choices:
            raise UnsupportedSchema(f"field {name!r}: an array must list its options (items.enum or items.anyOf)")
        return Field(name, "multi", title, description, required, choices, spec)
    if options:
        return Field(name, "enum", title, description, required, options, spec)
    if kind not in ("string", "number", "integer", "boolean"):
        raise UnsupportedSchema(f"field {name!r}: type {kind!r} is not a form-mode primitive")
    return Field(name, kind, title, description, required, (), spec)


def _options(spec: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    if isinstance(spec.get("enum"), list):
        values = [str(v) for v in spec["enum"]]
        given = spec.get("enumNames")
        names: list[Any] = given if isinstance(given, list) else values
        return tuple(zip(values, [str(n) for n in names], strict=False))
    for key in ("oneOf", "anyOf"):
        if isinstance(spec.get(key), list):
            return tuple((str(o["const"]), str(o.get("title") or o["const"]))
                         for o in spec[key] if isinstance(o, dict) and "const" in o)
    return ()


def question_text(message: str, fields: list[Field], *, asker: str, locale: str | None = None) -> str:
    """The chat question, in the conversation's language. Its last line is the hint in
    parentheses, like every question the chat page answers (the interaction id travels beside
    the text); field lines are `[n] …`, not `n. …`, which the page would offer as buttons —
    except a form of one choice, whose options are exactly that."""
    lines = [say(locale, "{asker} asks: {message}", asker=asker, message=message)]
    if len(fields) == 1 and fields[0].kind == "enum":
        lines += [f"{n}. {label}" for n, (_, label) in enumerate(fields[0].options, 1)]
        lines.append(say(locale, "(answer with the number of your choice, or “decline” or “cancel”)"))
    else:
        lines += [f"[{n}] {_describe(field, locale)}" for n, field in enumerate(fields, 1)]
        lines.append(say(locale, "(answer with the value, or “decline” or “cancel”)") if len(fields) == 1
                     else say(locale, "(answer as “1: value | 2: value”, or “decline” or “cancel”)"))
    return "\n".join(lines)


def _describe(field: Field, locale: str | None) -> str:
    spec = field.schema or {}
    label = field.title if field.title == field.name else f"{field.title} ({field.name})"
    kind = say(locale, _KINDS.get(field.kind, field.kind))
    if field.kind in ("enum", "multi"):
        choices = say(locale, ", ").join(f"{i}) {label}" for i, (_, label) in enumerate(field.options, 1))
        kind = say(locale, "one of {choices}", choices=choices) if field.kind == "enum" else \
            say(locale, "any of {choices}, comma-separated", choices=choices)
    elif field.kind == "string" and spec.get("format"):
        kind = f"{spec['format']}"
    bounds = _bounds(spec)
    needed = say(locale, "(required)") if field.required else say(locale, "(optional)")
    text = " ".join([label, "—", kind + (f" {bounds}" if bounds else ""), needed])
    return say(locale, "{text}: {description}", text=text, description=field.description) \
        if field.description else text


def _bounds(spec: dict[str, Any]) -> str:
    low = spec.get("minimum", spec.get("minLength", spec.get("minItems")))
    high = spec.get("maximum", spec.get("maxLength", spec.get("maxItems")))
    if low is None and high is None:
        return ""
    return f"[{'' if low is None else low}..{'' if high is None else high}]"


def parse_answer(text: str, fields: list[Field], *, locale: str | None = None) -> Answer | list[str]:
    """The elicitation result this answer gives, or what to fix (one line per problem, in `locale`)."""
    said = text.strip()
    if said.lower() in DECLINE:
        return Answer("decline")
    if said.lower() in CANCEL:
        return Answer("cancel")
    raw = _raw_values(said, fields)
    if isinstance(raw, _Problem):
        return [raw.said(locale)]
    content: Content = {}
    problems: list[str] = []
    for field in fields:
        value = raw.get(field.name)
        if value is None or (isinstance(value, str) and not value.strip()):
            if field.required:
                problems.append(say(locale, "{label}: {value}", label=field.title,
                                    value=say(locale, "required, give a value")))
            continue
        checked = _value(field, value)
        if isinstance(checked, _Problem):
            problems.append(say(locale, "{label}: {value}", label=field.title, value=checked.said(locale)))
        else:
            content[field.name] = checked
    return problems or Answer("accept", content)


def _raw_values(said: str, fields: list[Field]) -> dict[str, Any] | _Problem:
    if said.startswith("{"):
        try:
            decoded = json.loads(said)
        except ValueError as exc:
            return _Problem("the answer looks like JSON but is not: {error}", error=str(exc))
        return decoded if isinstance(decoded, dict) else _Problem("a JSON answer must be an object of fields")
    if len(fields) == 1 and not _keyed(said, fields):
        return {fields[0].name: said}
    values: dict[str, Any] = {}
    by_key = {str(n): f for n, f in enumerate(fields, 1)} | {f.name.lower(): f for f in fields} \
        | {f.title.lower(): f for f in fields}
    for line in filter(None, (part.strip() for part in re.split(r"[\n;|]", said))):
        key, sep, value = line.partition(":")
        field = by_key.get(key.strip().rstrip(".").lower()) if sep else None
        if field is None:
            return _Problem("cannot tell which field {line} is for: start each line with the field's number or name",
                            line=repr(line))
        values[field.name] = value.strip()
    return values


def _keyed(said: str, fields: list[Field]) -> bool:
    key = said.partition(":")[0].strip().rstrip(".").lower()
    return ":" in said and key in ("1", fields[0].name.lower(), fields[0].title.lower())


class _Problem:
    """What to fix, said later in the conversation's language (a message id of shared/i18n)."""

    def __init__(self, message: str, **values: Any) -> None:
        self.message = message
        self.values = values

    def said(self, locale: str | None) -> str:
        return say(locale, self.message, **self.values)


def _value(field: Field, value: Any) -> str | int | float | bool | list[str] | _Problem:
    spec = field.schema or {}
    if field.kind == "boolean":
        if isinstance(value, bool):
            return value
        word = str(value).strip().lower()
        return True if word in _TRUE else False if word in _FALSE else _Problem("answer yes or no")
    if field.kind in ("number", "integer"):
        return _number(field, value, spec)
    if field.kind == "enum":
        return _choice(field, str(value))
    if field.kind == "multi":
        chosen = value if isinstance(value, list) else [p for p in re.split(r"[,，]", str(value)) if p.strip()]
        picked: list[str] = []
        for part in chosen:
            one = _choice(field, str(part))
            if isinstance(one, _Problem):
                return one
            picked.append(one)
        return _within(len(picked), spec.get("minItems"), spec.get("maxItems"), "choices") or picked
    text = str(value).strip()
    return _within(len(text), spec.get("minLength"), spec.get("maxLength"), "characters") \
        or _format_problem(text, spec.get("format")) or text


def _number(field: Field, value: Any, spec: dict[str, Any]) -> int | float | _Problem:
    try:
        number: int | float = float(str(value).strip()) if not isinstance(value, int | float) else value
    except ValueError:
        return _Problem("{value} is not a number", value=repr(value))
    if field.kind == "integer":
        if float(number) != int(number):
            return _Problem("{value} is not a whole number", value=repr(value))
        number = int(number)
    return _within(number, spec.get("minimum"), spec.get("maximum"), "") or number


def _choice(field: Field, said: str) -> str | _Problem:
    wanted = said.strip()
    if wanted.isdigit() and 1 <= int(wanted) <= len(field.options):
        return field.options[int(wanted) - 1][0]
    for value, label in field.options:
        if wanted.lower() in (value.lower(), label.lower()):
            return value
    return _Problem("{value} is none of the options (answer with its number)", value=repr(wanted))


_LEAST = {"": N_("at least {n}"), "characters": N_("at least {n} characters"), "choices": N_("at least {n} choices")}
_MOST = {"": N_("at most {n}"), "characters": N_("at most {n} characters"), "choices": N_("at most {n} choices")}


def _within(n: float, low: Any, high: Any, unit: str) -> _Problem | None:
    if isinstance(low, int | float) and n < low:
        return _Problem(_LEAST[unit], n=f"{low:g}")
    if isinstance(high, int | float) and n > high:
        return _Problem(_MOST[unit], n=f"{high:g}")
    return None


def _format_problem(text: str, fmt: Any) -> _Problem | None:
    if fmt == "email" and not _EMAIL.match(text):
        return _Problem("{value} is not an email address", value=repr(text))
    if fmt == "uri" and "://" not in text:
        return _Problem("{value} is not a URI (scheme://…)", value=repr(text))
    try:
        if fmt == "date":
            date.fromisoformat(text)
        elif fmt == "date-time":
            datetime.fromisoformat(text)
    except ValueError:
        return _Problem("{value} is not a {format} (ISO 8601)", value=repr(text), format=str(fmt))
    return None
