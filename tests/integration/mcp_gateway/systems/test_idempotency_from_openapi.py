"""Idempotency keys that come from the API's own description, through a real gateway process and a
real HTTP server: an imported operation that declares an `Idempotency-Key` header parameter receives
the call's key in it on every write, though its system declares no header; a caller cannot set it;
and an import may name the header the whole system deduplicates on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.stack import StackBuilder
from tests.harness.tool_pool import Pool
from tests.integration.mcp_gateway.systems.recording_server import RecordingServer

BODY = {"required": True, "content": {"application/json": {"schema": {
    "type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]}}}}
SHOP: dict[str, Any] = {
    "openapi": "3.0.3", "info": {"title": "shop", "version": "1"},
    "paths": {
        "/orders": {"post": {
            "operationId": "createOrder", "requestBody": BODY, "responses": {"201": {"description": "created"}},
            "parameters": [{"name": "Idempotency-Key", "in": "header", "required": True,
                            "schema": {"type": "string"}}]}},
        "/refunds": {"post": {
            "operationId": "refund", "requestBody": BODY, "responses": {"201": {"description": "refunded"}}}},
    },
}


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    spec = tmp_path / "shop.yaml"
    spec.write_text(yaml.safe_dump(SHOP))
    return spec


async def test_a_declared_idempotency_key_header_gets_the_calls_key(tmp_path: Path, nats_url: str, nc: NATS,
                                                                   subjects: Subjects, server: RecordingServer,
                                                                   shop: Path) -> None:
    with StackBuilder(tmp_path).broker(nats_url).apps({}).gateway(AURORA_SPECS_DIR=str(tmp_path)).running():
        pool = Pool(nc, subjects)
        imported = await pool.admin("systems", "import_openapi", {"name": "shop", "base_url": server.url,
                                                                  "spec": str(shop)})
        assert sorted(imported["created"]) == ["shop.createOrder", "shop.refund"]
        system = await pool.admin("systems", "get", {"id": "shop"})
        assert system.get("idempotency_header") is None
        create = await pool.admin("tools", "get", {"id": "shop.createOrder"})
        assert create["execution"]["idempotency_header"] == "Idempotency-Key"
        assert set(create["input_schema"]["properties"]) == {"item"}  # not shown to the model or a caller

        result = await pool.call("shop.createOrder", {"item": "bolt"}, call_id="order-key-1")
        assert result["status"] == "ok", result
        sent = [r for r in server.requests if r.path == "/orders"]
        assert [r.header("Idempotency-Key") for r in sent] == ["order-key-1"]
        # A caller cannot set the key: the header is not an argument of the tool.
        refused = await pool.call("shop.createOrder", {"item": "bolt", "Idempotency-Key": "mine"},
                                  call_id="order-key-2")
        assert refused["status"] == "denied", refused
        # The operation without the header: its system declares none, so no key is sent.
        assert (await pool.call("shop.refund", {"item": "bolt"}, call_id="refund-1"))["status"] == "ok"
        assert [r.header("Idempotency-Key") for r in server.requests if r.path == "/refunds"] == [None]

        # The import names the header the whole system deduplicates writes on.
        await pool.admin("systems", "import_openapi", {"name": "shop", "base_url": server.url, "spec": str(shop),
                                                       "idempotency_header": "X-Request-Id"})
        assert (await pool.admin("systems", "get", {"id": "shop"}))["idempotency_header"] == "X-Request-Id"
        assert (await pool.call("shop.refund", {"item": "nut"}, call_id="refund-2"))["status"] == "ok"
        refunds = [r for r in server.requests if r.path == "/refunds"]
        assert refunds[-1].header("X-Request-Id") == "refund-2"
        assert [r.header("Idempotency-Key") for r in server.requests if r.path == "/orders"] == ["order-key-1"]
