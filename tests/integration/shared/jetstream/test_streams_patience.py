"""A bucket, object store or durable consumer opened while nats-server is too busy to answer in time (a loaded
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
from nats.js.api import ConsumerConfig

from aurora_cli.localnats import LocalNats
from shared.jetstream.consumers import ensure_durable
from shared.jetstream.streams import BucketSpec, StreamSpec, ensure_bucket, ensure_object_store, ensure_stream

FROZEN_FOR = 1.5  # longer than the client's JetStream timeout below: the first request times out


async def _open_bucket(js: JetStreamContext) -> None:
    await ensure_bucket(js, BucketSpec("SLOW_KV"))


async def _use_bucket(js: JetStreamContext) -> bytes | None:
    bucket = await js.key_value("SLOW_KV")
    await bucket.put("k", b"v")
    return (await bucket.get("k")).value


async def _open_object_store(js: JetStreamContext) -> None:
    await ensure_object_store(js, BucketSpec("SLOW_OBJ"))


async def _use_object_store(js: JetStreamContext) -> bytes | None:
    store = await js.object_store("SLOW_OBJ")
    await store.put("k", b"v")
    return (await store.get("k")).data


async def _make_stream(js: JetStreamContext) -> None:
    await ensure_stream(js, StreamSpec(name="SLOW_STREAM", subjects=("slow.>",)))


async def _nothing(js: JetStreamContext) -> None:
    return None


async def _open_consumer(js: JetStreamContext) -> None:
    await ensure_durable(js, "SLOW_STREAM", ConsumerConfig(durable_name="slow-worker"))


async def _use_consumer(js: JetStreamContext) -> bytes:
    info = await js.consumer_info("SLOW_STREAM", "slow-worker")
    return str(info.name).encode()


@pytest.mark.parametrize("before, opener, use, opened", [(_nothing, _open_bucket, _use_bucket, b"v"),
                                                         (_nothing, _open_object_store, _use_object_store, b"v"),
                                                         (_make_stream, _open_consumer, _use_consumer, b"slow-worker")],
                         ids=["bucket", "object-store", "durable-consumer"])
async def test_a_server_frozen_longer_than_the_timeout_is_asked_again(
        tmp_path: Path, before: Callable[[JetStreamContext], Awaitable[None]],
        opener: Callable[[JetStreamContext], Awaitable[Any]], use: Callable[[JetStreamContext], Awaitable[Any]],
        opened: bytes) -> None:
    server = LocalNats(tmp_path / "jetstream")
    server.start()
    try:
        nc = await nats.connect(server.url)
        try:
            assert server.pid is not None
            await before(nc.jetstream())
            os.kill(server.pid, signal.SIGSTOP)
            try:
                opening = asyncio.create_task(opener(nc.jetstream(timeout=1.0)))
                await asyncio.sleep(FROZEN_FOR)  # the fault's length, not a wait for an absence
            finally:
                os.kill(server.pid, signal.SIGCONT)
            await asyncio.wait_for(opening, 15)
            # What was opened is there and works; used with the default timeout, because a server
            # just thawed on a loaded machine can take longer than a second for any request.
            assert await use(nc.jetstream()) == opened
        finally:
            await nc.close()
    finally:
        server.stop()
