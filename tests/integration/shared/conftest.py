"""Fixtures of the shared library's integration tests."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client as NATS

from aurora_cli.localcluster import LocalCluster, wait_jetstream


@pytest.fixture
async def cluster_nc(tmp_path: Path) -> AsyncIterator[NATS]:
    """A client of a real three-node nats-server cluster, once JetStream answers on it."""
    cluster = LocalCluster(tmp_path / "cluster", 3, log_dir=tmp_path)
    cluster.start()
    try:
        nc = await nats.connect(servers=cluster.urls)
        try:
            await wait_jetstream(nc)
            yield nc
        finally:
            await nc.close()
    finally:
        cluster.stop()
