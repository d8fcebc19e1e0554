"""An operation whose OpenAPI description declares an idempotency-key header parameter: the header
is not an input (neither the model nor a caller sees it), the tool's mapping names it, and the tool
counts as deduplicating, so the ledger may send a call in doubt again."""

from __future__ import annotations

from typing import Any

from services.mcp_gateway.calls.targets import target_of
from services.mcp_gateway.systems.openapi_import import import_operations
from shared.contracts.system import System
from shared.contracts.tooldef import HttpExecution, ToolDefinition

KEY = {"name": "Idempotency-Key", "in": "header", "required": True, "schema": {"type": "string"}}
DOCUMENT: dict[str, Any] = {
    "openapi": "3.1.0", "info": {"title": "shop", "version": "1"},
    "paths": {
        "/orders": {"post": {
            "operationId": "createOrder", "parameters": [KEY],
            "requestBody": {"required": True, "content": {"application/json": {"schema": {
                "type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}}}},
            "responses": {"201": {"description": "created"}}}},
        "/orders/{id}": {"get": {
            "operationId": "getOrder",
            "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}},
                           {"name": "X-Trace", "in": "header", "schema": {"type": "string"}}],
            "responses": {"200": {"description": "the order"}}}},
        "/refunds": {"post": {
            "operationId": "refund",
            "parameters": [{"name": "x-request-id", "in": "header", "required": True, "schema": {"type": "string"}}],
            "responses": {"201": {"description": "refunded"}}}},
    },
}


def tools(idempotency_header: str | None = None) -> dict[str, ToolDefinition]:
    result = import_operations(DOCUMENT, system="shop", package="shop", now="2026-12-05T00:00:00+00:00",
                               by="reviewer", idempotency_header=idempotency_header)
    return {tool.name.removeprefix("shop."): tool for tool in result.tools}


def mapping(tool: ToolDefinition) -> HttpExecution:
    assert isinstance(tool.execution, HttpExecution)
    return tool.execution


def test_the_declared_header_carries_the_key_and_is_not_an_input() -> None:
    imported = tools()
    create = imported["createOrder"]
    assert mapping(create).idempotency_header == "Idempotency-Key"
    assert set(create.input_schema["properties"]) == {"item"} and create.input_schema["required"] == ["item"]
    assert all(param.name != "Idempotency-Key" for param in mapping(create).params)
    # Another header stays an input; an operation without the header has none.
    assert mapping(imported["getOrder"]).idempotency_header is None
    assert "X-Trace" in imported["getOrder"].input_schema["properties"]


def test_an_import_names_another_header_and_any_case_matches() -> None:
    assert mapping(tools()["refund"]).idempotency_header is None
    refund = tools("X-Request-Id")["refund"]
    assert mapping(refund).idempotency_header == "x-request-id"  # as the document spells it
    assert refund.input_schema["properties"] == {}
    assert mapping(tools("X-Request-Id")["createOrder"]).idempotency_header == "Idempotency-Key"


def test_the_notes_tell_the_reviewer_where_the_key_goes() -> None:
    result = import_operations(DOCUMENT, system="shop", package="shop", now="2026-12-05T00:00:00+00:00",
                               by="reviewer")
    assert any(note.startswith("shop.createOrder: header `Idempotency-Key` carries the gateway's idempotency key")
               for note in result.notes)


def test_an_operation_with_the_header_deduplicates_though_its_system_declares_none() -> None:
    system = System(name="shop", base_url="http://shop")
    imported = tools()
    assert target_of(imported["createOrder"], None, {}, {"shop": system}).deduplicates
    assert not target_of(imported["getOrder"], None, {}, {"shop": system}).deduplicates
    keyed = system.model_copy(update={"idempotency_header": "Idempotency-Key"})
    assert target_of(imported["getOrder"], None, {}, {"shop": keyed}).deduplicates
