"""A server's PING that comes before the handshake's PONG is answered, and the connection works.

nats-server pings a new client two seconds after it connected. When checking the CONNECT takes it
longer (a password's bcrypt hash on a loaded machine: 2.4 s, on a two-CPU machine running the test
suite), that PING comes first; nats-py took it for the handshake's answer and returned from
`connect` still connecting, and nothing the client sent ever left (a service's JetStream requests
all timed out until it gave up starting). Here a proxy holds the client's handshake PING instead,
so the server's own comes first, as it did then; `shared.nats.bus.open_nats` answers it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from shared.nats.bus import open_nats
from tests.harness.tcpproxy import TcpProxy

HELD = 2.5  # past nats-server's first ping to a new client, two seconds after it connected


@pytest.fixture
def slow_handshake(nats_url: str) -> Iterator[TcpProxy]:
    proxy = TcpProxy(int(nats_url.rsplit(":", 1)[1])).start()
    proxy.hold_handshake_ping(HELD)
    yield proxy
    proxy.stop()


async def test_a_ping_before_the_handshakes_pong_is_answered_and_the_client_is_connected(
        slow_handshake: TcpProxy) -> None:
    nc = await open_nats(servers=slow_handshake.url, connect_timeout=10, allow_reconnect=False)
    try:
        assert b"PING\r\n" in bytes(slow_handshake.to_client)  # the server's ping came first
        assert nc.is_connected
        answer = await nc.request("$JS.API.INFO", b"", timeout=5)
        assert json.loads(answer.data)["type"] == "io.nats.jetstream.api.v1.account_info_response"
    finally:
        await nc.close()
