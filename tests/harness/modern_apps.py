"""The test app of one MCP generation (`tests/apps/generations_app.py`) as a real HTTP server process."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from aurora_cli.localnats import free_port
from tests.harness.processes import REPO

GENERATIONS_APP = REPO / "tests" / "apps" / "generations_app.py"


@dataclass
class GenerationApp:
    generation: str
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> GenerationApp:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, str(GENERATIONS_APP), "--generation", self.generation, "--port", str(self.port)],
                cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60  # a python process importing the SDK, on a loaded machine
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the {self.generation} app exited with {self.process.returncode}: "
                                     f"{self.log.read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError(f"the {self.generation} app did not answer on port {self.port} within 60s")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)
        self.process = None


@contextlib.contextmanager
def serving(folder: Path, generation: str) -> Iterator[GenerationApp]:
    """A `stateless` (2026-07-28 only) or `handshake` (2025-11-25 only) app on a free port."""
    app = GenerationApp(generation, free_port(), folder / f"{generation}-app.log").start()
    try:
        yield app
    finally:
        app.stop()
