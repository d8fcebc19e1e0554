"""Reconnecting to a node that takes connections and never answers closes each socket it gives up.

Behind a dead link (here: a proxy that accepts and forwards nothing) every reconnect attempt
gets its TCP connection and then times out waiting for the server's INFO. nats-py reuses one
transport for the next attempt; `shared.nats.bus.open_nats` gives it one that closes the socket it
replaces. nats-py's own dropped it unclosed, for the garbage collector to close with a
`ResourceWarning` (an error under pytest: the cluster network-cut scenario failed on it).
"""

from __future__ import annotations

import asyncio
import gc
import os
import warnings
from collections.abc import Iterator
from pathlib import Path

import nats.errors
import pytest

from shared.nats.bus import open_nats
from tests.harness.tcpproxy import TcpProxy
from tests.harness.waiting import poll

ATTEMPTS = 4


def sockets_to(port: int) -> int:
    """How many of this process's open TCP sockets have `port` as their peer (Linux)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed since listed
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not Path(table).exists():
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[2].rsplit(":", 1)[1], 16) == port and fields[9] in inodes:
                count += 1
    return count


@pytest.fixture
def proxy(nats_url: str) -> Iterator[TcpProxy]:
    proxy = TcpProxy(int(nats_url.rsplit(":", 1)[1])).start()
    yield proxy
    proxy.stop()


@pytest.fixture
def no_collector() -> Iterator[None]:
    """The garbage collector would close forgotten sockets at a time of its own choosing."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


async def test_attempts_that_time_out_before_info_leave_no_socket_unclosed(proxy: TcpProxy,
                                                                             no_collector: None) -> None:
    timeouts: list[Exception] = []

    async def on_error(exc: Exception) -> None:
        if isinstance(exc, (TimeoutError, nats.errors.TimeoutError)):
            timeouts.append(exc)

    nc = await open_nats(servers=[proxy.url], connect_timeout=0.5, reconnect_time_wait=0.1,
                         max_reconnect_attempts=-1, error_cb=on_error)
    try:
        assert sockets_to(proxy.port) == 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ResourceWarning)
            proxy.cut()
            await poll(lambda: asyncio.sleep(0, len(timeouts) >= ATTEMPTS), timeout=30,
                       what=f"{ATTEMPTS} reconnect attempts timed out waiting for INFO")
            # At most the attempt under way is open; nothing given up is left for the collector.
            assert sockets_to(proxy.port) <= 1
            gc.collect()
        unclosed = [str(warning.message) for warning in caught if warning.category is ResourceWarning]
        assert unclosed == [], f"{len(unclosed)} sockets left unclosed after {len(timeouts)} attempts: {unclosed[0]}"
        proxy.heal()
        await poll(lambda: asyncio.sleep(0, nc.is_connected), timeout=30,
                   what="the client connected again after the heal")
        await nc.flush(timeout=5)
        assert sockets_to(proxy.port) == 1
    finally:
        await nc.close()
