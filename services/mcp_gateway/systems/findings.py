"""What a reviewer must still supply for an imported operation: descriptions, units, result meaning.

Deterministic and conservative: a finding is a hint to look, never a reason the import fails.
The unit check is a heuristic (a unit word or symbol in the description of a number that is not
an identifier).
"""

from __future__ import annotations

import re
from typing import Any

from services.mcp_gateway.systems.schema import Resolver, as_dict, json_media, numeric

_UNIT = re.compile(
    r"(unit|单位|毫秒|秒|分钟|小时|天|次|个|条|件|元|%|‰|°|℃|"
    r"\b(ms|milliseconds?|seconds?|sec|minutes?|min|hours?|days?|weeks?|months?|years?|"
    r"bytes?|[kmgt]i?b|kg|mg|km|cm|mm|kv|ma|kw|kwh|hz|kpa|mpa|bar|rpm|celsius|fahrenheit|kelvin|"
    r"yuan|cny|usd|eur|cents?|items?|pieces?|count|number|per|ratio|index|version)\b)",
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(r"(^[Ii][Dd]$|_[Ii][Dd]$|[a-z0-9]Id$|ID$)")


def review_findings(operation: dict[str, Any], document: dict[str, Any], resolver: Resolver, name: str,
                    key: str, locations: dict[str, str], properties: dict[str, Any],
                    problems: list[str]) -> list[str]:
    """Every finding for one operation, in a stable order."""
    found: list[str] = []
    if not (isinstance(operation.get("operationId"), str) and operation["operationId"].strip()):
        found.append(f"operationId: none; the name {name} was derived from {key}")
    if not str(operation.get("summary") or "").strip() and not str(operation.get("description") or "").strip():
        found.append("description: the operation has no summary or description")
    found += _input_findings(properties, locations)
    found += _response_findings(operation, resolver)
    security = operation.get("security", document.get("security"))
    if isinstance(security, list):
        schemes = sorted({scheme for req in security if isinstance(req, dict) for scheme in req})
        if schemes:
            found.append(f"authorization: requires {' or '.join(schemes)}; configure the system's auth header")
    return found + problems


def _input_findings(properties: dict[str, Any], locations: dict[str, str]) -> list[str]:
    found: list[str] = []
    for input_name, schema in properties.items():
        where = f"input `{input_name}` ({locations[input_name]})"
        text = str(schema.get("description") or "").strip() if isinstance(schema, dict) else ""
        number = numeric(schema) and not _IDENTIFIER.search(input_name)
        if not text:
            found.append(f"{where}: no description" + ("; it is a number: give its unit" if number else ""))
        elif number and not _UNIT.search(text):
            found.append(f"{where}: a number without a unit in its description")
    return found


def _response_findings(operation: dict[str, Any], resolver: Resolver) -> list[str]:
    responses = as_dict(operation.get("responses"))
    success = sorted(code for code in responses if code.startswith("2")) or (
        ["default"] if "default" in responses else [])
    if not success:
        return ["responses: no success (2xx) response is described; say what a successful call returns"]
    found: list[str] = []
    for code in success:
        response = resolver.deref(responses[code], found, f"response {code}") or {}
        if not str(response.get("description") or "").strip():
            found.append(f"response {code}: no description")
        if code == "204":
            continue
        content = as_dict(response.get("content"))
        media = json_media(content)
        if not content:
            found.append(f"response {code}: no content schema; say what the result means")
        elif media is None:
            found.append(f"response {code}: content type {', '.join(sorted(content))} is not JSON; "
                         "the result is returned as text")
        elif not isinstance(content[media], dict) or "schema" not in content[media]:
            found.append(f"response {code}: no schema; say what the result means")
        else:
            undescribed = _undescribed_fields(resolver.schema(content[media]["schema"], []))
            if undescribed:
                found.append(f"response {code}: fields without a description: {', '.join(undescribed)}")
    return found


def _undescribed_fields(schema: Any) -> list[str]:
    """Top-level fields of an object result (or of an array's items) that say nothing of their meaning."""
    if isinstance(schema, dict) and schema.get("type") == "array" and isinstance(schema.get("items"), dict):
        schema = schema["items"]
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return []
    return [name for name, sub in properties.items()
            if not (isinstance(sub, dict) and str(sub.get("description") or "").strip())]
