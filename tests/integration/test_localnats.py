"""LocalNats is ready only when its own nats-server listens: a port someone else holds is never
taken for it (the tests' clients and services would otherwise talk to a stranger's server)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import nats
import pytest

from aurora_cli.localnats import LocalNats, PortTaken, free_port


@pytest.fixture
def stranger() -> Iterator[socket.socket]:
    """A listener on a free port that is not a nats-server."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", free_port()))
        sock.listen()
        yield sock


def port_of(sock: socket.socket) -> int:
    return int(sock.getsockname()[1])


def test_a_given_port_held_by_another_process_is_an_error_not_a_server(
        tmp_path: Path, stranger: socket.socket) -> None:
    server = LocalNats(tmp_path / "js", port=port_of(stranger), log_file=tmp_path / "nats.log")
    with pytest.raises(PortTaken, match=f"127.0.0.1:{port_of(stranger)}: the port is in use"):
        server.start()
    assert not server.running


async def test_a_chosen_port_taken_before_the_start_is_traded_for_another(
        tmp_path: Path, stranger: socket.socket) -> None:
    server = LocalNats(tmp_path / "js", log_file=tmp_path / "nats.log")
    server.port = port_of(stranger)  # as if another process had bound the chosen port first
    server.start()
    try:
        assert server.port != port_of(stranger)
        client = await nats.connect(server.url, connect_timeout=2, allow_reconnect=False)
        try:
            assert client.connected_server_version.major >= 2
        finally:
            await client.close()
        known = server.port
        server.stop()
        server.start()  # a restart keeps the address its clients know
        assert server.running and server.port == known
    finally:
        server.stop()
