"""Loading OpenAPI documents from a real HTTP server (JSON and YAML) and from files."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from services.mcp_gateway.systems.openapi_load import OpenApiError, load_openapi, load_openapi_async
from tests.integration.mcp_gateway.systems.recording_server import RecordingServer, Reply, free_port

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "openapi"


def serve_fixtures(server: RecordingServer) -> None:
    def reply(request: object) -> Reply:
        name = getattr(request, "path", "/").lstrip("/")
        path = FIXTURES / name
        return Reply(200, path.read_bytes(), {"Content-Type": "application/yaml"}) if path.is_file() \
            else Reply(404, b"not here")
    server.reply = reply


async def test_json_and_yaml_over_http_match_the_files(server: RecordingServer, client: httpx.AsyncClient) -> None:
    serve_fixtures(server)
    for name in ("petstore-3.0.json", "devices-3.1.yaml"):
        from_file = load_openapi(str(FIXTURES / name))
        assert await load_openapi_async(f"{server.url}/{name}", client=client) == from_file
        assert await load_openapi_async(f"{server.url}/{name}") == from_file
        assert await load_openapi_async(str(FIXTURES / name)) == from_file


def test_the_blocking_loader_fetches_urls(server: RecordingServer) -> None:
    serve_fixtures(server)
    document = load_openapi(f"{server.url}/devices-3.1.yaml")
    assert document["openapi"] == "3.1.0"
    assert "200" in document["paths"]["/devices"]["get"]["responses"]  # a YAML int key became a string


async def test_fetch_failures_name_the_source(server: RecordingServer, client: httpx.AsyncClient) -> None:
    serve_fixtures(server)
    missing = f"{server.url}/nope.yaml"
    with pytest.raises(OpenApiError) as caught:
        await load_openapi_async(missing, client=client)
    assert caught.value.source == missing and "404" in str(caught.value)
    dead = f"http://127.0.0.1:{free_port()}/spec.json"
    with pytest.raises(OpenApiError, match="cannot fetch the document") as caught:
        load_openapi(dead)
    assert str(caught.value).startswith(dead)
