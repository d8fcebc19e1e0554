"""The asset register (`python -m apps.aurora_app_assets`) as a real HTTP server: search by device
name, profile by assetCode, clear errors, and the OpenAPI document it serves — the one the demo
imports, whose two operations become the tools the relay uses."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from aurora_cli.localnats import free_port
from services.mcp_gateway.systems.openapi_import import import_operations
from tests.harness.ports import listens
from tests.harness.processes import REPO
from tests.harness.waiting import poll_sync


@pytest.fixture(scope="module")
def assets(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("assets") / "assets.log"
    with log.open("wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "apps.aurora_app_assets", "--port", str(port)], cwd=REPO,
                                   stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"

    def up() -> bool | None:
        assert process.poll() is None, log.read_text()
        if not listens(process.pid, port):  # an answer from another worker's app is not ours
            return None
        try:
            return httpx.get(f"{base}/healthz", timeout=1).status_code == 200 or None
        except httpx.HTTPError:
            return None

    try:
        poll_sync(up, timeout=30, what="the asset register listening", interval=0.1)
        yield base
    finally:
        process.terminate()
        process.wait(10)


def test_search_by_device_name_finds_two_one_or_none(assets: str) -> None:
    two = httpx.get(f"{assets}/assets", params={"deviceName": "Pump P-101"}).json()
    assert two["count"] == 2 and [i["assetCode"] for i in two["items"]] == ["AS-0001", "AS-0002"]
    assert httpx.get(f"{assets}/assets", params={"deviceName": "Compressor C-3"}).json()["count"] == 1
    assert httpx.get(f"{assets}/assets", params={"deviceName": "Fan F-9"}).json() == \
        {"deviceName": "Fan F-9", "items": [], "count": 0}
    missing = httpx.get(f"{assets}/assets")
    assert missing.status_code == 400 and "deviceName is required" in missing.json()["error"]


def test_a_profile_by_asset_code_and_a_404_for_an_unknown_one(assets: str) -> None:
    profile = httpx.get(f"{assets}/assets/AS-0003").json()
    assert profile["name"] == "Screw compressor C-3" and profile["deviceName"] == "Compressor C-3"
    unknown = httpx.get(f"{assets}/assets/AS-0099")
    assert unknown.status_code == 404 and "AS-0099" in unknown.json()["error"]


def test_it_serves_its_own_openapi_document_whose_operations_become_read_tools(assets: str) -> None:
    served = httpx.get(f"{assets}/openapi.yaml")
    committed = (REPO / "apps" / "aurora_app_assets" / "openapi.yaml").read_text(encoding="utf-8")
    assert served.status_code == 200 and served.text == committed
    imported = import_operations(yaml.safe_load(served.text), system="assets", package="demo.assets",
                                 now="2026-01-01T00:00:00+00:00", by="test")
    tools = {t.name: t for t in imported.tools}
    assert set(tools) == {"demo.assets.search_assets", "demo.assets.get_asset_profile"}
    assert all(t.side_effect == "read" and t.state == "DRAFT" for t in tools.values())
    assert tools["demo.assets.search_assets"].input_schema["required"] == ["deviceName"]
    assert tools["demo.assets.get_asset_profile"].input_schema["required"] == ["assetCode"]
    # Bounded strings: a model held to the schema ends its argument there instead of writing on.
    assert tools["demo.assets.search_assets"].input_schema["properties"]["deviceName"]["maxLength"] == 64
    assert tools["demo.assets.get_asset_profile"].input_schema["properties"]["assetCode"]["pattern"]
    demo = (REPO / "deploy" / "demo" / "00-assets-tools.yml").read_text(encoding="utf-8")
    assert all(name in demo for name in tools)  # the reviewed file publishes exactly these
    assert Path(REPO / "deploy" / "demo" / "../../apps/aurora_app_assets/openapi.yaml").resolve().is_file()
