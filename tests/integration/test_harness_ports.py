"""The harness's readiness check: a port counts as ready only when the test's own process
listens on it, never because another process answers there."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from aurora_cli.localnats import free_port
from tests.harness.ports import PortTakenByAnother, listens, wait_listening

SERVE = ("import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); "
         "s.listen(); time.sleep(60)")


@pytest.fixture
def stranger() -> Iterator[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", free_port()))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_the_listening_process_is_told_from_another() -> None:
    port = free_port()
    child = subprocess.Popen([sys.executable, "-c", SERVE, str(port)])
    try:
        wait_listening(child, port, "the child", timeout=20)
        assert listens(child.pid, port)
        assert not listens(os.getpid(), port)
    finally:
        child.kill()
        child.wait()


def test_a_process_that_lost_its_port_to_another_is_reported_as_such(stranger: int) -> None:
    child = subprocess.Popen([sys.executable, "-c", SERVE, str(stranger)], stderr=subprocess.DEVNULL)
    try:
        with pytest.raises(PortTakenByAnother, match=f"another process listens on port {stranger}"):
            wait_listening(child, stranger, "the child", timeout=20)
    finally:
        child.kill()
        child.wait()
