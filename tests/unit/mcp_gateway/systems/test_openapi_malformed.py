"""Malformed documents the fuzzers found: imported as written or refused, never a crash."""

from __future__ import annotations

import json
from typing import Any

import pytest

from services.mcp_gateway.systems.limits import OpenApiError
from services.mcp_gateway.systems.openapi_import import import_operations
from services.mcp_gateway.systems.openapi_load import parse_openapi


def body_schema_of(schema: Any) -> dict[str, Any]:
    document = {"openapi": "3.0.3", "paths": {"/x": {"post": {"requestBody": {"content": {
        "application/json": {"schema": schema}}}}}}}
    result = import_operations(parse_openapi(json.dumps(document), "doc"), system="s", package="s",
                               now="2026-01-01T00:00:00+00:00", by="t")
    return result.tools[0].input_schema


@pytest.mark.parametrize("part", [{"type": "object", "required": 5}, {"properties": None},
                                  {"properties": {"a": {}}, "required": [["a"]]}])
def test_an_all_of_part_with_malformed_fields_is_kept_as_written(part: dict[str, Any]) -> None:
    schema = body_schema_of({"allOf": [part]})
    assert schema["properties"] == {"body": {"allOf": [part]}}  # the whole body, not merged


def test_the_outer_schema_of_an_all_of_is_checked_too() -> None:
    schema = body_schema_of({"allOf": [{"type": "object"}], "required": 7})
    assert schema["properties"]["body"]["required"] == 7


def test_control_characters_are_a_typed_refusal() -> None:
    with pytest.raises(OpenApiError, match="not valid YAML"):
        parse_openapi("\x1f", "doc")
