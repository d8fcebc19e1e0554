"""A bucket or object store opened while nats-server is too busy to answer in time (a loaded
machine, a cluster still electing leaders): the service asks again instead of exiting."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.js import JetStreamContext

from aurora_cli.localnats import LocalNats
from shared.streams import BucketSpec, ensure_bucket, ensure_object_store

FROZEN_FOR = 1.5  # longer than the client's JetStream timeout below: the first request times out


async def _open_bucket(js: JetStreamContext) -> Any:
    bucket = await ensure_bucket(js, BucketSpec("SLOW_KV"))
    await bucket.put("k", b"v")
    return (await bucket.get("k")).value


async def _open_object_store(js: JetStreamContext) -> Any:
    store = await ensure_object_store(js, BucketSpec("SLOW_OBJ"))
    await store.put("k", b"v")
    return (await store.get("k")).data


@pytest.mark.parametrize("opener", [_open_bucket, _open_object_store], ids=["bucket", "object-store"])
async def test_a_server_frozen_longer_than_the_timeout_is_asked_again(
        tmp_path: Path, opener: Callable[[JetStreamContext], Awaitable[Any]]) -> None:
    server = LocalNats(tmp_path / "jetstream")
    server.start()
    try:
        nc = await nats.connect(server.url)
        try:
            assert server.pid is not None
            os.kill(server.pid, signal.SIGSTOP)
            try:
                opening = asyncio.create_task(opener(nc.jetstream(timeout=1.0)))
                await asyncio.sleep(FROZEN_FOR)  # the fault's length, not a wait for an absence
            finally:
                os.kill(server.pid, signal.SIGCONT)
            assert await asyncio.wait_for(opening, 15) == b"v"
        finally:
            await nc.close()
    finally:
        server.stop()
