"""A NATS client for a test, closed when the test is done whatever happened."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from nats.aio.client import Client as NATS

from shared.nats.bus import open_nats


@asynccontextmanager
async def nats_client(url: str, **options: Any) -> AsyncIterator[NATS]:
    client = await open_nats(servers=url, **options)
    try:
        yield client
    finally:
        await client.close()
