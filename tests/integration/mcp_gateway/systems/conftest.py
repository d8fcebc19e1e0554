"""Fixtures: a recording HTTP server per test and an httpx client (no mocks of either)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.integration.mcp_gateway.systems.recording_server import RecordingServer


@pytest.fixture
def server() -> Iterator[RecordingServer]:
    running = RecordingServer().start()
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as http:
        yield http
