"""A tool call's arguments as a person reads them (pure): each by its input schema's title (or
description, or name), in the schema's order, values as text — never JSON.

`{"device_id": "P-101", "threshold": 90}` with titles 设备 and 阈值 reads `设备：P-101，阈值：90`.
Nested objects read as `label：（key：value，…）`, lists as their items joined, long values are
cut; arguments the schema does not name come after, by name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from shared.i18n import say

MAX_VALUE = 80  # characters of one value shown
MAX_TOTAL = 400  # characters of the whole summary
MAX_LABEL = 40  # a description used as a label is cut to this
_SENTENCE_END = re.compile(r"(?<=[。！？])|(?<=[.!?])\s")  # a description's first sentence is its label


def label_of(name: str, spec: Any) -> str:
    """What a property is called for a person: its title, else a short description, else its name.
    A title that is only the name re-cased (pydantic's `Device Id` for `device_id`) is the name's."""
    if isinstance(spec, Mapping):
        title = spec.get("title")
        if isinstance(title, str) and title.strip() and _loose(title) != _loose(name):
            return title.strip()
        description = spec.get("description")
        if isinstance(description, str) and description.strip():
            first = _SENTENCE_END.split(description.strip().splitlines()[0])[0].rstrip("。.")
            return first if len(first) <= MAX_LABEL else first[:MAX_LABEL - 1] + "…"
    return name


def _loose(text: str) -> str:
    return "".join(c for c in text.lower() if c.isalnum())


def summarize(arguments: Mapping[str, Any], schema: Mapping[str, Any] | None, locale: str | None) -> str:
    """The arguments in a sentence's words (empty when there are none)."""
    text = _object(arguments, schema or {}, locale)
    return text if len(text) <= MAX_TOTAL else text[:MAX_TOTAL - 1] + "…"


def _object(values: Mapping[str, Any], schema: Mapping[str, Any], locale: str | None) -> str:
    properties = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    assert isinstance(properties, Mapping)
    names = [n for n in properties if n in values] + sorted(str(n) for n in values if n not in properties)
    parts = [say(locale, "{label}: {value}", label=label_of(name, properties.get(name)),
                 value=_value(values[name], properties.get(name), locale))
             for name in names]
    return say(locale, ", ").join(parts)


def _value(value: Any, spec: Any, locale: str | None) -> str:
    spec = spec if isinstance(spec, Mapping) else {}
    if isinstance(value, bool):
        return say(locale, "yes") if value else say(locale, "no")
    if value is None:
        return say(locale, "(none)")
    if isinstance(value, Mapping):
        inner = _object(value, spec, locale)
        return say(locale, "({items})", items=inner) if inner else say(locale, "(none)")
    if isinstance(value, list | tuple):
        items = spec.get("items") if isinstance(spec.get("items"), Mapping) else {}
        shown = [_value(item, items, locale) for item in value]
        return say(locale, ", ").join(shown) if shown else say(locale, "(none)")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = " ".join(str(value).split())
    return text if len(text) <= MAX_VALUE else text[:MAX_VALUE - 1] + "…"
