"""A NATS client for a test, closed when the test is done whatever happened."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import nats
from nats.aio.client import Client as NATS


@asynccontextmanager
async def nats_client(url: str, **options: Any) -> AsyncIterator[NATS]:
    client = await nats.connect(url, **options)
    try:
        yield client
    finally:
        await client.close()
