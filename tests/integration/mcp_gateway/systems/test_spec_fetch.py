"""Fetching spec URLs from real HTTP servers: size capped while streaming, same-host redirects only."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from services.mcp_gateway.systems.limits import OpenApiError, OpenApiLimitExceeded, OpenApiLimits
from services.mcp_gateway.systems.openapi_fetch import fetch_spec
from tests.integration.mcp_gateway.systems.recording_server import Recorded, RecordingServer, Reply

PETSTORE = Path(__file__).resolve().parents[3] / "fixtures" / "openapi" / "petstore-3.0.json"


def redirecting(server: RecordingServer, other: RecordingServer) -> None:
    def reply(request: Recorded) -> Reply:
        hops = {"/moved": "/spec.json", "/hop1": "/hop2", "/hop2": "/hop3", "/hop3": "/hop4", "/hop4": "/spec.json",
                "/away": f"http://localhost:{other.port}/spec.json", "/ftp": "ftp://127.0.0.1/spec.json"}
        if request.path in hops:
            return Reply(302, b"", {"Location": hops[request.path]})
        if request.path == "/spec.json":
            return Reply(200, PETSTORE.read_bytes(), {"Content-Type": "application/json"})
        return Reply(404, b"no")
    server.reply = reply


async def test_a_same_host_redirect_is_followed_a_bounded_number_of_times(
        server: RecordingServer, client: httpx.AsyncClient) -> None:
    other = RecordingServer().start()
    try:
        redirecting(server, other)
        text = await fetch_spec(f"{server.url}/moved", client, OpenApiLimits(), timeout=5)
        assert '"openapi": "3.0.2"' in text
        assert [r.path for r in server.requests] == ["/moved", "/spec.json"]
        with pytest.raises(OpenApiLimitExceeded) as caught:
            await fetch_spec(f"{server.url}/hop1", client, OpenApiLimits(max_redirects=3), timeout=5)
        assert "redirects more than 3 times (AURORA_OPENAPI_MAX_REDIRECTS)" in str(caught.value)
    finally:
        other.stop()


async def test_a_redirect_to_another_host_is_refused_and_that_host_never_asked(
        server: RecordingServer, client: httpx.AsyncClient) -> None:
    other = RecordingServer().start()
    try:
        redirecting(server, other)
        redirecting(other, other)
        with pytest.raises(OpenApiError) as caught:
            await fetch_spec(f"{server.url}/away", client, OpenApiLimits(), timeout=5)
        assert "redirected to another host (localhost); only redirects within 127.0.0.1 are followed" \
            in str(caught.value)
        with pytest.raises(OpenApiError, match=r"redirected to ftp://, which is not fetched"):
            await fetch_spec(f"{server.url}/ftp", client, OpenApiLimits(), timeout=5)
        assert [r.path for r in server.requests] == ["/away", "/ftp"]  # the server was asked …
        assert other.requests == []  # … the host it pointed to never was
    finally:
        other.stop()


@pytest.fixture
async def endless() -> AsyncIterator[str]:
    """A raw HTTP/1.0 server that streams a body with no Content-Length until the client leaves."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Type: application/yaml\r\n\r\nopenapi: 3.0.3\nx: '")
        try:
            for _ in range(10_000):
                writer.write(b"a" * 1024)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    listening = await asyncio.start_server(answer, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/spec.yaml"
    finally:
        listening.close()


async def test_the_size_cap_holds_while_streaming_without_a_content_length(
        endless: str, client: httpx.AsyncClient) -> None:
    with pytest.raises(OpenApiLimitExceeded) as caught:
        await fetch_spec(endless, client, OpenApiLimits(max_bytes=64 * 1024), timeout=10)
    assert str(caught.value) == f"{endless}: the document is larger than 65536 bytes (AURORA_OPENAPI_MAX_BYTES)"


async def test_a_declared_length_over_the_cap_is_refused_before_reading(
        server: RecordingServer, client: httpx.AsyncClient) -> None:
    server.reply = lambda _request: Reply(200, b"x" * 5000, {"Content-Type": "application/json"})
    with pytest.raises(OpenApiLimitExceeded, match="larger than 1000 bytes"):
        await fetch_spec(f"{server.url}/spec.json", client, OpenApiLimits(max_bytes=1000), timeout=5)
