"""Fixtures for the bridge process tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_streams, fabric_streams
from tests.harness.processes import ServiceProcess
from tests.harness.stack import Stack, StackBuilder


@pytest.fixture
async def fabric(nc: NATS, subjects: Subjects) -> None:
    """The streams exist before anything is published (as any service's start-up makes them)."""
    await ensure_streams(nc.jetstream(), fabric_streams(subjects))


@pytest.fixture
def stack(tmp_path: Path, nats_url: str) -> Iterator[Stack]:
    """The bridges a test starts (`start_bridge`), stopped after it."""
    with StackBuilder(tmp_path).broker(nats_url).running() as running:
        yield running


@pytest.fixture
def start_bridge(stack: Stack) -> Callable[[str], ServiceProcess]:
    """`start_bridge("bridge-a")`: one more bridge process in the test's stack, serving."""

    def start(tag: str = "bridge-1") -> ServiceProcess:
        return stack.launch("bridge", tag).wait_ready()

    return start
