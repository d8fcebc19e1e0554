"""Tool arguments against the tool's input schema: each violation named by its JSON pointer."""

from __future__ import annotations

from typing import Any

from services.mcp_gateway.calls.arguments import FAST_DEPTH, ArgumentCheck, nested_within
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


AGREEMENT_CASES: list[tuple[dict[str, Any], Any]] = [
    (WEATHER, {"city": "北京", "days": 2}),
    (WEATHER, {"city": 5}),
    (WEATHER, {"town": "x"}),
    (WEATHER, {"city": "x", "days": 0}),
    (WEATHER, {"city": "x", "days": 1.0}),  # an integral number is an integer
    (WEATHER, {"city": "x", "days": True}),  # a boolean is not
    ({"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-\\d+$"}}}, {"code": "ABC-12"}),
    ({"type": "object", "properties": {"code": {"type": "string", "pattern": "^[A-Z]{3}-\\d+$"}}}, {"code": "abc-12"}),
    ({"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"type": "number", "maximum": 9}}},
     {"n": 10}),
    ({"type": "object", "properties": {"when": {"type": "string", "format": "date"}}}, {"when": "not a date"}),
    ({"type": "object", "properties": {"big": {"type": "integer"}}}, {"big": 2**80}),
    ({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
      "properties": {"tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True}}},
     {"tags": ["a", "a"]}),
]


def test_the_fast_validator_says_yes_exactly_when_jsonschema_finds_nothing() -> None:
    check = ArgumentCheck()
    for schema, arguments in AGREEMENT_CASES:
        compiled = check._validator(tool(schema))
        assert compiled.fast is not None, schema  # every case above goes through jsonschema-rs
        slow_says = not any(True for _ in compiled.checked.iter_errors(arguments))  # type: ignore[union-attr]
        assert compiled.fits(arguments) == slow_says, (schema, arguments)
        assert (check.refusal(tool(schema), arguments) is None) == slow_says


def test_a_schema_jsonschema_rs_cannot_take_is_checked_by_jsonschema_alone() -> None:
    unknown_ref = {"type": "object", "properties": {"a": {"$ref": "https://schemas.example.invalid/a.json"}}}
    compiled = ArgumentCheck()._validator(tool(unknown_ref))
    assert compiled.fast is None and not compiled.fits({"a": 1})
    refused = ArgumentCheck().refusal(tool(unknown_ref), {"a": 1})
    assert refused is not None and refused.error is not None and refused.error.code == "invalid_schema"


def test_nesting_beyond_the_fast_depth_goes_to_jsonschema_and_is_refused_not_a_crash() -> None:
    deep: Any = "x"
    for _ in range(100_000):  # jsonschema-rs would overflow its stack on this (the process dies)
        deep = [deep]
    assert not nested_within({"v": deep}, FAST_DEPTH)
    assert nested_within({"v": [[{"w": [1]}]]}, 5) and not nested_within({"v": [[{"w": [1]}]]}, 4)
    assert nested_within("a scalar", 1)
    schema = {"type": "object", "properties": {"v": {"$ref": "#/$defs/n"}},
              "$defs": {"n": {"anyOf": [{"type": "string"}, {"type": "array", "items": {"$ref": "#/$defs/n"}}]}}}
    refused = ArgumentCheck().refusal(tool(schema), {"v": deep})
    assert refused is not None and refused.error is not None
    assert refused.error.message == "the arguments nest too deeply to check"
