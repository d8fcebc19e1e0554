"""The test app of one MCP generation (`tests/apps/generations_app.py`) as a real HTTP server process."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from aurora_cli.localnats import free_port
from tests.harness.ports import PortTakenByAnother, wait_listening
from tests.harness.processes import REPO

GENERATIONS_APP = REPO / "tests" / "apps" / "generations_app.py"


@dataclass
class GenerationApp:
    generation: str
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None
    started: bool = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> GenerationApp:
        for attempt in range(3):
            try:
                return self._start_once()
            except PortTakenByAnother:
                if self.started or attempt == 2:
                    raise  # a restart keeps the URL the gateway was given
                self.port = free_port()
        raise AssertionError("unreachable")

    def _start_once(self) -> GenerationApp:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, str(GENERATIONS_APP), "--generation", self.generation, "--port", str(self.port)],
                cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        # 60 s: a python process importing the SDK, on a loaded machine
        wait_listening(self.process, self.port, f"the {self.generation} app", log=self.log, timeout=60)
        self.started = True
        return self

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
