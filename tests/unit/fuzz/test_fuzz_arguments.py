"""Fuzzing argument checks: random arguments against random schemas (valid or not) and against
the real schemas of imported and MCP tools. Checking never crashes; every rejection is
`invalid_arguments` (or `invalid_schema`, the tool's fault) and names the JSON pointer of each
violation, a pointer that leads to a value the caller actually sent."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.mcp_gateway.calls.arguments import ArgumentCheck
from services.mcp_gateway.systems.openapi_import import import_operations
from services.mcp_gateway.systems.openapi_load import load_openapi
from shared.contracts.tooldef import McpExecution, ToolDefinition

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "openapi"
FUZZ = settings(max_examples=80, deadline=timedelta(seconds=5), suppress_health_check=[HealthCheck.too_slow])
CHECK = ArgumentCheck()  # shared on purpose: the cache must never hand one tool's validator to another

scalars = st.none() | st.booleans() | st.integers(-(2**64), 2**64) | st.floats(allow_nan=False) | st.text(max_size=8)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=6), inner, max_size=4), max_leaves=15)
keys = st.sampled_from(["city", "qty", "a/b", "~x", "password", "items", ""]) | st.text(max_size=5)
arguments = st.dictionaries(keys, values, max_size=5)
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null"])
schemas: st.SearchStrategy[Any] = st.recursive(
    st.fixed_dictionaries({}, optional={
        "type": TYPES | st.lists(TYPES, max_size=3) | st.just(5), "enum": st.lists(scalars, min_size=1, max_size=3),
        "minimum": st.integers(-5, 5), "maxLength": st.integers(-1, 5), "minItems": st.integers(0, 3),
        "pattern": st.sampled_from(["^[a-z]+$", "\\d", "(", "[[:alpha:]]"]), "format": st.sampled_from(
            ["password", "date-time", "email"]), "writeOnly": st.booleans(), "const": scalars,
        "$ref": st.sampled_from(["#/$defs/n", "#/$defs/missing", "#", "other.json#/x"])}) | st.booleans(),
    lambda inner: st.fixed_dictionaries({}, optional={
        "type": st.just("object"), "properties": st.dictionaries(st.text(max_size=5), inner, max_size=4),
        "required": st.lists(st.text(max_size=5), max_size=3), "additionalProperties": inner,
        "items": inner, "anyOf": st.lists(inner, min_size=1, max_size=3), "allOf": st.lists(inner, max_size=2),
        "not": inner, "$defs": st.fixed_dictionaries({"n": inner}), "patternProperties": st.dictionaries(
            st.sampled_from(["^a", "x$"]), inner, max_size=2)}),
    max_leaves=10,
)


def tool(schema: Any, name: str) -> ToolDefinition:
    return ToolDefinition(name=name, system="fuzz", input_schema=schema, side_effect="read",
                          execution=McpExecution(app="fuzz", tool=name))


def resolve(pointer: str, document: Any) -> Any:
    """RFC 6901: the value `pointer` names in `document` (KeyError/IndexError when it names none)."""
    node = document
    for raw in pointer.split("/")[1:] if pointer else []:
        token = raw.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def assert_answer(definition: ToolDefinition, args: dict[str, Any]) -> None:
    refused = CHECK.refusal(definition, args)
    if refused is None:
        return
    assert refused.status == "denied" and refused.error is not None
    assert refused.error.code in ("invalid_arguments", "invalid_schema"), refused
    assert refused.error.message.strip()
    if refused.error.code == "invalid_arguments" and refused.structured is not None:
        for violation in refused.structured["violations"]:
            pointer = violation["pointer"]
            assert pointer == "" or pointer.startswith("/"), violation
            assert f"{pointer or '(root)'}: {violation['message']}" in refused.error.message
            resolve(pointer, args)  # the pointer leads to something the caller sent


@FUZZ
@given(schemas, arguments)
def test_random_arguments_against_random_schemas(schema: Any, args: dict[str, Any]) -> None:
    assert_answer(tool(schema if isinstance(schema, dict) else {"not": {}} if not schema else {}, "fuzz.random"), args)


def _real_tools() -> list[ToolDefinition]:
    found: list[ToolDefinition] = []
    for name in ("petstore-3.0.json", "devices-3.1.yaml"):
        found += import_operations(load_openapi(str(FIXTURES / name)), system="s", package="s",
                                   now="2026-01-01T00:00:00+00:00", by="fuzz").tools
    return found


REAL = _real_tools()


@FUZZ
@given(st.sampled_from(REAL), arguments)
def test_random_arguments_against_imported_tools(definition: ToolDefinition, args: dict[str, Any]) -> None:
    assert_answer(definition, args)


@FUZZ
@given(st.sampled_from(REAL), st.data())
def test_arguments_shaped_like_the_schema_with_wrong_leaves(definition: ToolDefinition, data: st.DataObject) -> None:
    # Every declared property given, each with a random value: mostly wrong types, deep pointers.
    properties = definition.input_schema.get("properties", {})
    args = {name: data.draw(values, label=name) for name in properties}
    assert_answer(definition, args)
