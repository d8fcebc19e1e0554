"""A lost NATS connection is a warning; a process closing its own connection is not; the failed
reconnect attempts of one outage are counted, and said only if it lasts (every 10 s).

nats-py calls the disconnect callback on every close too, so every service used to log "nats
disconnected" at warning level at every stop (`make chaos` counted one per service per
scenario), and its error callback at every failed attempt. Real nats-server behind a proxy that
cuts the connection.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from shared.config.settings import NatsSettings
from shared.nats.bus import close_connection, connect
from tests.harness.tcpproxy import TcpProxy
from tests.harness.waiting import poll


@pytest.fixture
def proxy(nats_url: str) -> Iterator[TcpProxy]:
    proxy = TcpProxy(int(nats_url.rsplit(":", 1)[1])).start()
    yield proxy
    proxy.stop()


async def test_a_cut_is_one_warning_its_failed_reconnects_are_counted_and_the_own_close_is_info(
        proxy: TcpProxy, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="aurora.bus")

    def said() -> list[tuple[str, str]]:  # the cut's own error ("nats error": a reset, not an EOF) aside
        return [(r.levelname, r.getMessage()) for r in caplog.records
                if r.name == "aurora.bus" and r.getMessage() != "nats error"]

    # Attempts on the cut proxy are taken and never answered: each times out after 0.5 s.
    nc = await connect(NatsSettings(url=proxy.url), name="aurora-test", connect_timeout=0.5)
    proxy.cut()

    async def cut_seen() -> bool:
        return ("WARNING", "nats disconnected") in said() and nc.is_reconnecting

    await poll(cut_seen, timeout=15, what="the cut seen and the client reconnecting")

    async def attempts_failed() -> bool:  # one every 1.5 s (a second's pause, 0.5 s timeout)
        return proxy.held >= 3  # the third attempt held: the two before it failed

    await poll(attempts_failed, timeout=15, what="reconnect attempts held by the cut proxy")
    proxy.heal()

    async def reconnected() -> bool:
        return nc.is_connected

    await poll(reconnected, timeout=15, what="the client back after the heal")
    await close_connection(nc)
    assert nc.is_closed
    # The disconnect says the outage began; its failed attempts are counted, not said again.
    assert said() == [("WARNING", "nats disconnected"), ("INFO", "nats reconnected"),
                      ("INFO", "nats connection closed")]
    back = next(r for r in caplog.records if r.getMessage() == "nats reconnected")
    assert back.__dict__["fields"]["failed_attempts"] >= 2


async def test_a_connection_already_lost_is_closed_without_a_second_warning(proxy: TcpProxy,
                                                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="aurora.bus")
    nc = await connect(NatsSettings(url=proxy.url), name="aurora-test")
    proxy.cut()

    async def reconnecting() -> bool:
        return nc.is_reconnecting

    await poll(reconnecting, timeout=10, what="the client reconnecting after the cut")
    await close_connection(nc)  # a stop while the connection is away: closed, not drained
    assert nc.is_closed
    said = [(r.levelname, r.getMessage()) for r in caplog.records
            if r.name == "aurora.bus" and r.getMessage() != "nats error"]
    assert said == [("WARNING", "nats disconnected"), ("INFO", "nats connection closed")]
