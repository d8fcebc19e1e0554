"""Fixtures for the gateway's process tests.

`platform` is one running stack shared by the tests that only read from it (it takes a few
seconds to start): its own nats-server, the supervisor, the gateway and the event-bridge, with
the weather app, the third-party `mcp-server-time`, the echo app, an app that never answers
`initialize`, and the notes app over Streamable HTTP. Tests that kill or stop something start
their own services on the test's broker with `stack`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from tests.harness.notes_app import serving_notes
from tests.harness.stack import Stack, StackBuilder
from tests.harness.tcpproxy import TcpProxy
from tests.integration.mcp_gateway.helpers import (
    PYTHON,
    SILENT_APP,
    SILENT_TIMEOUT,
    echo_app,
    stdio,
    time_app,
    weather_app,
    write_apps,
)


@pytest.fixture(scope="package")
def notes_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serving_notes(tmp_path_factory.mktemp("notes")) as url:
        yield url


@pytest.fixture(scope="package")
def platform(tmp_path_factory: pytest.TempPathFactory, notes_url: str) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("platform")
    apps = {
        "weather": weather_app(),
        "time": time_app(),
        "echo": echo_app(),
        "silent": stdio([PYTHON, str(SILENT_APP)], package="test.silent",
                        mcp={"health_timeout_seconds": SILENT_TIMEOUT}),
        "notes": {"package": "acme.notes", "mcp": {"transport": "streamable_http", "url": notes_url}},
    }
    with StackBuilder(folder).apps(write_apps(folder, apps)).bridge().supervisor().gateway().running() as stack:
        yield stack


@pytest.fixture
def stack(tmp_path: Path, nats_url: str) -> Iterator[Stack]:
    """Services a test starts itself (`launch`, `serving`) on its own broker; stopped callers first
    (the gateway before the supervisor), so no supervisor waits for a session nobody will close."""
    with StackBuilder(tmp_path).broker(nats_url).running() as running:
        yield running


@pytest.fixture
async def pnc(platform: Stack) -> AsyncIterator[NATS]:
    """A client of the shared platform's nats-server."""
    async with platform.client() as client:
        yield client


@pytest.fixture
def nats_proxy(nats_url: str) -> Iterator[TcpProxy]:
    """A proxy in front of the test's nats-server that can cut the network; asked for before
    `stack`, so it outlives the processes connected through it (a gateway stopping tells NATS)."""
    proxy = TcpProxy(int(nats_url.rsplit(":", 1)[1])).start()
    yield proxy
    proxy.stop()
