"""The scheduler tests' processes (the bridge, schedulers), started through one stack."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.stack import Stack, StackBuilder


@pytest.fixture
def stack(tmp_path: Path, nats_url: str) -> Iterator[Stack]:
    """Services a test starts itself (`launch`, `serving`) on its broker, stopped after it."""
    with StackBuilder(tmp_path).broker(nats_url).running() as running:
        yield running
