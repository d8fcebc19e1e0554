"""Fixtures for the supervisor tests: a running supervisor with the relay app."""

from __future__ import annotations

from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.processes import Spawn
from tests.integration.app_supervisor.helpers import (
    MODULE,
    PYTHON,
    RELAY_APP,
    Channels,
    Running,
    app_entry,
    write_config,
)


@pytest.fixture
async def relay(nc: NATS, subjects: Subjects, spawn: Spawn, tmp_path: Path) -> Running:
    """The supervisor running the relay app (package `test.relay`), generation 1 started."""
    config = write_config(tmp_path, {
        "relay": app_entry([PYTHON, str(RELAY_APP)], package="test.relay",
                           startup={"city": "北京", "n": 3},
                           mcp={"env": {"GREETING": "hi ${GREETING_SOURCE}"}}),
    })
    channels = await Channels(nc, subjects, "test.relay").start()
    supervisor = spawn(MODULE, AURORA_APPS_CONFIG=str(config), GREETING_SOURCE="from-env",
                       NATS_PASSWORD_UNUSED="x")
    started = await channels.wait_state("started", 1)
    return Running(supervisor, channels, started)
