"""Ctrl-C stops `aurora console` quietly, whatever the page was doing: with a signed-in page's
live event stream open, or a request being answered, the console says it stopped and exits
130 (interrupted) — no traceback (one Ctrl-C of three printed 58 lines of one)."""

from __future__ import annotations

import os
import re
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.harness.processes import ServiceProcess, service_env
from tests.harness.waiting import poll_sync

SERVING = re.compile(r"console serving (http://127\.0\.0\.1:(\d+)/)")


@pytest.fixture
def console(nats_url: str, tmp_path: Path) -> Iterator[tuple[ServiceProcess, str, str]]:
    process = ServiceProcess("aurora_cli.main", service_env(nats_url), tmp_path, "console",
                             args=["console", "--port", "0"]).start()
    try:
        match = poll_sync(lambda: SERVING.search(process.logs()), timeout=20, what="the console's address")
        yield process, match.group(1), f"127.0.0.1:{match.group(2)}"
    finally:
        process.kill()


def _open_stream(url: str, host: str, opened: threading.Event) -> None:
    """A signed-in page's live events, held open until the console goes away."""
    with httpx.Client(base_url=url, timeout=httpx.Timeout(10, read=None)) as client:
        signed = client.post("/sign-in", json={"name": "alice", "password": "any"},
                             headers={"origin": f"http://{host}"})
        assert signed.status_code == 200, signed.text
        try:
            with client.stream("GET", "/events/stream") as response:
                assert response.status_code == 200
                opened.set()
                for _ in response.iter_lines():
                    pass
        except httpx.HTTPError:
            pass  # the console went away: what this page sees of a Ctrl-C


@pytest.mark.parametrize("streams", [0, 2])
def test_ctrl_c_stops_the_console_without_a_traceback(
        console: tuple[ServiceProcess, str, str], streams: int) -> None:
    process, url, host = console
    readers = []
    for _ in range(streams):
        opened = threading.Event()
        reader = threading.Thread(target=_open_stream, args=(url, host, opened), daemon=True)
        reader.start()
        assert opened.wait(20), "the event stream did not open"
        readers.append(reader)
    os.kill(process.pid, signal.SIGINT)
    code = process.wait(timeout=20)
    output = process.logs()
    assert "Traceback" not in output and "Error" not in output, output
    assert code == 130, output
    assert "console stopped" in output, output
    for reader in readers:
        reader.join(timeout=10)
