"""The notes example app served on its own over Streamable HTTP (no supervisor), for the tests
of a gateway that reaches an app by URL."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from aurora_cli.localnats import free_port
from tests.harness.ports import wait_listening
from tests.harness.processes import REPO


def _wait_http(url: str, port: int, process: subprocess.Popen[bytes], timeout: float = 20.0) -> None:
    wait_listening(process, port, "the notes app", timeout=timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"{url} did not answer within {timeout}s")


@contextlib.contextmanager
def serving_notes(folder: Path, env: dict[str, str] | None = None) -> Iterator[str]:
    """The notes example app served over Streamable HTTP on a free port (no supervisor); yields
    its MCP URL. Its output goes to `folder`/notes.log."""
    port = free_port()
    with (folder / "notes.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "apps.aurora_app_notes", "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_http(f"http://127.0.0.1:{port}/healthz", port, process)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            process.wait(10)
