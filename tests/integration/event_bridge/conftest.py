"""Fixtures for the bridge process tests."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_streams, fabric_streams
from tests.harness.processes import ServiceProcess

Spawn = Callable[..., ServiceProcess]


@pytest.fixture
async def fabric(nc: NATS, subjects: Subjects) -> None:
    """The streams exist before anything is published (as any service's start-up makes them)."""
    await ensure_streams(nc.jetstream(), fabric_streams(subjects))


@pytest.fixture
def start_bridge(spawn: Spawn) -> Callable[[str], ServiceProcess]:
    def start(tag: str = "bridge-1") -> ServiceProcess:
        process = spawn("services.event_bridge", tag=tag)
        process.wait_ready()
        return process

    return start
