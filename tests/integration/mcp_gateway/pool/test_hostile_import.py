"""Hostile OpenAPI imports against a real gateway process: refused quickly with the limit named,
while tool calls to a real MCP app (echo over stdio, through the supervisor) keep being answered."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import AdminRequestError, admin_request
from tests.harness.stack import StackBuilder
from tests.harness.tool_pool import Pool
from tests.integration.mcp_gateway.pool.helpers import REPO

FIXTURES = REPO / "tests" / "fixtures" / "openapi"
IMPORT_SECONDS = 2.0
# ~190,000 YAML values: under the node limit, but pure-Python YAML parsing takes longer than the
# time budget, so the import runs its full budget (on the event loop, it would stall every call).
SLOW = 'openapi: 3.0.3\ninfo: {title: slow, version: "1"}\npaths: {}\nx-big:\n' + "- 1\n" * 190_000


@pytest.fixture
async def hostile(nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path) -> AsyncIterator[Pool]:
    config = tmp_path / "apps.yml"
    config.write_text(yaml.safe_dump({"apps": {"echo": {
        "mcp": {"command": [sys.executable, str(REPO / "tests/apps/echo_app.py")], "health_timeout_seconds": 15}}}}))
    specs = tmp_path / "specs"
    specs.mkdir()
    (specs / "petstore.json").write_bytes((FIXTURES / "petstore-3.0.json").read_bytes())
    (tmp_path / "outside.json").write_bytes((FIXTURES / "petstore-3.0.json").read_bytes())
    builder = StackBuilder(tmp_path).broker(nats_url).apps(config).supervisor().gateway(
        AURORA_SPECS_DIR=str(specs), AURORA_OPENAPI_SECONDS=str(IMPORT_SECONDS))
    async with builder.up():
        pool = Pool(nc, subjects)
        await pool.wait_for_tools("echo.echo")
        yield pool


async def import_openapi(pool: Pool, spec: str, document: str | None = None) -> tuple[float, Any]:
    """(seconds taken, the reply or the AdminRequestError)."""
    body = {"name": "hostile", "base_url": "http://127.0.0.1:9", "spec": spec}
    if document is not None:
        body["document"] = document
    started = time.monotonic()
    try:
        reply: Any = await admin_request(pool.nc, pool.subjects, "systems", "import_openapi", body, timeout=30)
    except AdminRequestError as exc:
        reply = exc
    return time.monotonic() - started, reply


async def test_hostile_documents_are_refused_quickly_naming_the_limit_and_files_only_below_the_folder(
        hostile: Pool, tmp_path: Path) -> None:
    specs = tmp_path / "specs"
    fanout = (FIXTURES / "hostile-fanout-3.0.json").read_text()
    bomb = (FIXTURES / "hostile-alias-bomb.yaml").read_text()
    took, refused = await import_openapi(hostile, "fanout.json", fanout)
    assert isinstance(refused, AdminRequestError) and refused.code == "invalid_openapi", refused
    assert str(refused).endswith("fanout.json: the expanded schemas exceed 200000 nodes (AURORA_OPENAPI_MAX_NODES)")
    assert took < IMPORT_SECONDS
    took, refused = await import_openapi(hostile, "bomb.yaml", bomb)
    assert isinstance(refused, AdminRequestError) and refused.code == "invalid_openapi", refused
    assert "bomb.yaml: the document expands to more than 200000 values" in str(refused)
    assert took < IMPORT_SECONDS
    assert all(t["system"] != "hostile" for t in (await hostile.admin("tools", "get"))["items"])
    # Files: only below the specs folder (one process for both checks: starting one is the slow part).
    _, inside = await import_openapi(hostile, "petstore.json")
    assert not isinstance(inside, AdminRequestError), inside
    assert "hostile.getPetById" in inside["created"]
    for outside in (str(specs.parent / "outside.json"), "../outside.json", "/etc/passwd"):
        _, refused = await import_openapi(hostile, outside)
        assert isinstance(refused, AdminRequestError) and refused.code == "invalid_openapi", refused
        assert f"gateway reads spec files only below {specs} (AURORA_SPECS_DIR)" in str(refused)


async def test_tool_calls_are_answered_while_a_hostile_import_runs(hostile: Pool) -> None:
    importing = asyncio.create_task(import_openapi(hostile, "slow.yaml", SLOW))
    latencies: list[float] = []
    while not importing.done():
        started = time.monotonic()
        result = await hostile.call("echo.echo", {"value": len(latencies)})
        assert result["status"] == "ok", result
        latencies.append(time.monotonic() - started)
    took, refused = await importing
    assert isinstance(refused, AdminRequestError), refused
    assert f"slow.yaml: reading and converting the document takes longer than {IMPORT_SECONDS:g} s" in str(refused)
    assert took >= IMPORT_SECONDS
    # Calls went on all through the import, each in ordinary time (an import on the event loop
    # would hold one call for its whole budget).
    assert len(latencies) >= 5 and max(latencies) < 1.0, latencies
