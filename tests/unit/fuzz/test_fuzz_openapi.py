"""Fuzzing the OpenAPI import path: random text, and structured documents (JSON and YAML, with
shared nodes that YAML writes as aliases), through parsing and conversion under tight limits.
Whatever comes in, the import either gives tools or refuses with a typed `OpenApiError` that
has a reason; it never crashes and never outlives its time budget."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.mcp_gateway.systems.limits import Budget, OpenApiError, OpenApiLimitExceeded, OpenApiLimits
from services.mcp_gateway.systems.openapi_import import import_operations
from services.mcp_gateway.systems.openapi_load import parse_openapi

LIMITS = OpenApiLimits(max_bytes=64 * 1024, max_nodes=5_000, max_depth=24, max_ref_depth=8, seconds=1.0)
# Bounded to keep the default suite fast (seconds per test); the deadline is generous because the
# machine is shared, the import's own time budget (LIMITS.seconds) is what must hold.
FUZZ = settings(max_examples=60, deadline=timedelta(seconds=5), suppress_health_check=[HealthCheck.too_slow])
STRUCTURED = settings(FUZZ, max_examples=30)
NAMES = ("A", "B", "C", "D")

scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=12)
junk = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)


def _ref(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda name: {"$ref": f"#/components/{kind}/{name}"}, st.sampled_from((*NAMES, "Nope", "")))


# An allOf part the importer merges into one object (the usual composition), fields malformed or not.
plain = st.fixed_dictionaries({"type": st.just("object")}, optional={
    "properties": st.dictionaries(st.text(max_size=4), st.fixed_dictionaries({"type": st.just("string")}),
                                  max_size=2) | scalars,
    "required": st.lists(st.text(max_size=4), max_size=2) | scalars, "description": junk})
schemas: st.SearchStrategy[Any] = st.recursive(
    st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null", 5]),
        "nullable": st.booleans(), "description": st.text(max_size=20), "enum": st.lists(scalars, max_size=3),
        "example": junk, "readOnly": st.booleans(), "format": st.sampled_from(["int64", "password", "date"]),
        "minimum": st.integers(), "exclusiveMinimum": st.booleans() | st.integers()}) | _ref("schemas"),
    lambda inner: st.fixed_dictionaries({}, optional={
        "type": st.just("object"), "properties": st.dictionaries(st.text(max_size=6), inner, max_size=4),
        "required": st.lists(st.text(max_size=6), max_size=3) | junk, "items": inner,
        "additionalProperties": st.booleans() | inner, "allOf": st.lists(inner | plain, max_size=3) | junk,
        "anyOf": st.lists(inner, max_size=3), "not": inner}),
    max_leaves=10,
)
composed = st.fixed_dictionaries({"allOf": st.lists(plain, min_size=1, max_size=3)})
parameters = st.fixed_dictionaries({
    "name": st.text(max_size=10) | junk, "in": st.sampled_from(["path", "query", "header", "cookie", "body"]) | junk,
}, optional={"required": st.booleans() | junk, "schema": schemas, "description": st.text(max_size=10),
             "content": st.dictionaries(st.sampled_from(["application/json", "text/plain"]),
                                        st.fixed_dictionaries({"schema": schemas}), max_size=2)}) | _ref("parameters")
media = st.dictionaries(st.sampled_from(["application/json", "application/x+json", "text/plain", "*/*"]),
                        st.fixed_dictionaries({}, optional={"schema": schemas | composed}) | junk, max_size=2)
operations = st.fixed_dictionaries({}, optional={
    "operationId": st.text(max_size=12) | junk, "summary": st.text(max_size=12) | junk,
    "parameters": st.lists(parameters, max_size=4) | junk,
    "requestBody": st.fixed_dictionaries({"content": media}, optional={"required": st.booleans()})
    | _ref("requestBodies"),
    "responses": st.dictionaries(st.sampled_from(["200", "201", "204", "default", "404"]),
                                 st.fixed_dictionaries({}, optional={"description": st.text(max_size=8),
                                                                     "content": media}) | _ref("responses"),
                                 max_size=3) | junk,
    "security": st.lists(st.dictionaries(st.text(max_size=5), st.lists(st.text(max_size=3)), max_size=2)) | junk,
})
path_items = st.dictionaries(st.sampled_from(["get", "post", "put", "patch", "delete", "head", "trace", "parameters"]),
                             st.one_of(operations, operations, junk), max_size=3) | _ref("pathItems")


def mostly(proper: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`proper` three times in four, anything else the fourth."""
    return st.one_of(proper, proper, proper, junk)


documents = st.fixed_dictionaries({
    "openapi": mostly(st.sampled_from(["3.0.3", "3.1.0", "3.0", "2.0", "4.0.0", "3.0.3", "3.1.0"])),
    "paths": mostly(st.dictionaries(st.sampled_from(["/", "/a", "/a/{id}", "/{x}/{y}", "/b/{id}.json"])
                                    | st.text(max_size=8), path_items, max_size=4)),
}, optional={
    "info": st.fixed_dictionaries({}, optional={"title": junk, "version": junk}),
    "components": st.fixed_dictionaries({}, optional={
        "schemas": st.dictionaries(st.sampled_from(NAMES), schemas, max_size=4),
        "parameters": st.dictionaries(st.sampled_from(NAMES), parameters, max_size=2),
        "requestBodies": st.dictionaries(st.sampled_from(NAMES), st.fixed_dictionaries({"content": media}), max_size=2),
        "responses": st.dictionaries(st.sampled_from(NAMES), st.fixed_dictionaries({"description": st.text()}),
                                     max_size=2)}),
    "swagger": st.just("2.0"), "security": junk,
})


def run_import(text: str) -> None:
    """The import path as the gateway runs it (minus the thread): tools, or a refusal with a reason."""
    started = time.monotonic()
    budget = Budget(LIMITS)
    try:
        document = parse_openapi(text, "fuzz", budget)
        result = import_operations(document, system="fuzz", package="fuzz", now="2026-01-01T00:00:00+00:00",
                                   by="fuzz", budget=budget)
    except OpenApiLimitExceeded as exc:
        assert exc.setting.startswith("AURORA_") and exc.setting in str(exc), exc
    except OpenApiError as exc:
        assert exc.reason.strip() and str(exc).startswith("fuzz: "), exc
    else:
        assert all(tool.name.startswith("fuzz.") and tool.state == "DRAFT" for tool in result.tools)
        assert all(": " in skipped for skipped in result.skipped)  # every skipped operation says why
        json.dumps([tool.input_schema for tool in result.tools])  # the stored schemas are plain JSON
    assert time.monotonic() - started < LIMITS.seconds + 2.0


@FUZZ
@given(st.text(max_size=400))
def test_any_text_is_imported_or_refused_with_a_reason(text: str) -> None:
    run_import(text)


@STRUCTURED
@given(documents)
def test_structured_documents_as_json(document: dict[str, Any]) -> None:
    run_import(json.dumps(document))


# An operation whose JSON body and parameters are always there, so their schemas are converted.
well_formed_operations = st.fixed_dictionaries({
    "requestBody": st.fixed_dictionaries({"content": st.fixed_dictionaries({
        "application/json": st.fixed_dictionaries({"schema": schemas | composed})})}),
    "parameters": st.lists(parameters, max_size=3),
}, optional={"operationId": st.text(max_size=8), "responses": operations.map(lambda op: op.get("responses"))})


@STRUCTURED
@given(st.lists(well_formed_operations, min_size=1, max_size=3),
       st.dictionaries(st.sampled_from(NAMES), schemas, max_size=4), st.sampled_from(["3.0.3", "3.1.0"]))
def test_operations_in_a_well_formed_document(ops: list[dict[str, Any]], components: dict[str, Any],
                                              version: str) -> None:
    # The envelope is right, so every example reaches the conversion of its operations.
    paths = {f"/p{n}/{{id}}": {"post": op} for n, op in enumerate(ops)}
    run_import(json.dumps({"openapi": version, "info": {"title": "t", "version": "1"}, "paths": paths,
                           "components": {"schemas": components}}))


@STRUCTURED
@given(documents, st.integers(1, 6))
def test_structured_documents_as_yaml_with_aliases(document: dict[str, Any], copies: int) -> None:
    # The same objects several times over: PyYAML writes them once (&id) and refers to them (*id).
    shared = document.get("components")
    if isinstance(document.get("paths"), dict):
        document = {**document, **{f"x-copy-{n}": document["paths"] for n in range(copies)}}
    if isinstance(shared, dict):
        document["x-shared"] = [shared] * copies
    run_import(yaml.safe_dump(document, allow_unicode=True))


@FUZZ
@given(st.lists(st.sampled_from(["openapi: 3.0.3\n", "paths:\n", "  /a:\n", "    get: &x {}\n", "x: *x\n",
                                 "- [", "]", "{", "}", "&a [*a]\n", "? ", ": ", "!!binary aGk=\n", "'", "\t",
                                 "x: !!set {a}\n", "9" * 5000, ".nan\n", "<<: *x\n"]), max_size=30))
def test_yaml_fragments_are_imported_or_refused_with_a_reason(parts: list[str]) -> None:
    run_import("".join(parts))
