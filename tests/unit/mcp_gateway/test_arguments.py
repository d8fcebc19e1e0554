"""Tool arguments against the tool's input schema: each violation named by its JSON pointer."""

from __future__ import annotations

from typing import Any

from services.mcp_gateway.arguments import ArgumentCheck
from shared.contracts.tooldef import McpExecution, ToolDefinition

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
           "required": ["city"], "additionalProperties": False}


def tool(schema: dict[str, Any], name: str = "im.polaris.weather.get_weather") -> ToolDefinition:
    return ToolDefinition(name=name, system="im.polaris.weather", input_schema=schema,
                          execution=McpExecution(app="im.polaris.weather", tool="get_weather"), side_effect="read")


def test_arguments_that_fit_pass() -> None:
    assert ArgumentCheck().refusal(tool(WEATHER), {"city": "北京", "days": 2}) is None


def test_a_wrong_type_is_denied_with_its_pointer() -> None:
    refused = ArgumentCheck().refusal(tool(WEATHER), {"city": 5})
    assert refused is not None and refused.status == "denied" and refused.error is not None
    assert refused.error.code == "invalid_arguments"
    assert refused.error.message == ("arguments do not match im.polaris.weather.get_weather's input schema: "
                                     "/city: 5 is not of type 'string'")
    assert refused.structured == {"violations": [{"pointer": "/city", "message": "5 is not of type 'string'"}]}
    assert refused.side_effect == "read"


def test_every_violation_is_listed_nested_pointers_escaped_the_root_named() -> None:
    schema = {"type": "object", "required": ["items"], "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"qty": {"type": "integer"}, "a/b~c": {"type": "string"}}}}}}
    refused = ArgumentCheck().refusal(tool(schema), {"items": [{"qty": 1}, {"qty": "2", "a/b~c": 3}]})
    assert refused is not None and refused.error is not None
    pointers = [v["pointer"] for v in (refused.structured or {})["violations"]]
    assert pointers == ["/items/1/a~1b~0c", "/items/1/qty"]
    missing = ArgumentCheck().refusal(tool(WEATHER), {"town": "x"})
    assert missing is not None and missing.error is not None
    assert "(root): 'city' is a required property" in missing.error.message
    assert "(root): Additional properties are not allowed ('town' was unexpected)" in missing.error.message


def test_a_secret_with_the_wrong_shape_is_not_repeated_in_the_message() -> None:
    schema = {"type": "object", "properties": {"password": {"type": "string", "minLength": 12},
                                               "pin": {"type": "string", "format": "password", "pattern": "^[0-9]+$"}}}
    refused = ArgumentCheck().refusal(tool(schema), {"password": "hunter2", "pin": "abcd"})
    assert refused is not None and refused.error is not None
    assert "hunter2" not in refused.error.message and "abcd" not in refused.error.message
    assert "/password: [redacted] is too short" in refused.error.message
    assert "hunter2" not in str(refused.structured) and "abcd" not in str(refused.structured)


def test_a_changed_schema_is_compiled_again_and_a_broken_one_refuses_the_call() -> None:
    check = ArgumentCheck()
    assert check.refusal(tool(WEATHER), {"city": "x"}) is None
    stricter = {**WEATHER, "properties": {**WEATHER["properties"], "city": {"type": "string", "maxLength": 0}}}
    assert check.refusal(tool(stricter), {"city": "x"}) is not None  # same tool name, new schema
    broken = check.refusal(tool({"type": "object", "properties": {"city": {"type": 5}}}), {"city": "x"})
    assert broken is not None and broken.error is not None and broken.error.code == "invalid_schema"
    assert "input schema is not a valid JSON Schema" in broken.error.message


def test_arguments_nested_too_deeply_are_refused_not_a_crash() -> None:
    deep: Any = "x"
    for _ in range(5000):
        deep = [deep]
    schema = {"type": "object", "properties": {"v": {"$ref": "#/$defs/n"}},
              "$defs": {"n": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"$ref": "#/$defs/n"}}]}}}
    refused = ArgumentCheck().refusal(tool(schema), {"v": deep})
    assert refused is not None and refused.error is not None and refused.error.code == "invalid_arguments"
    assert refused.error.message == "the arguments nest too deeply to check"
