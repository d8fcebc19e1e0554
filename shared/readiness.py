"""A service's readiness, as a file a container health check can test.

`AURORA_READY_FILE` (`Settings.ready_file`) names a file that the service writes once it serves
(its consumers, endpoints and apps are in place) and removes when it stops; compose.yaml sets it and each
Aurora service's health check is `test -f` of it, so `docker compose up --wait` and
`depends_on: {condition: service_healthy}` wait for a service that serves, not one that merely
runs. Unset (`aurora dev`, Kubernetes), nothing is written.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from shared.lifecycle import Runnable

READY_FILE = "AURORA_READY_FILE"


def mark_ready(path: Path | None) -> None:
    """The service serves: write the file (its content, the process id, is for a person)."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{os.getpid()}\n", encoding="utf-8")


def mark_not_ready(path: Path | None) -> None:
    """Before it serves (a restarted container keeps the last process's file) and when stopping."""
    if path is not None:
        path.unlink(missing_ok=True)


class ReadyWhenStarted:
    """A service's lifecycle (`shared.service.run_until_stopped` drives it) that is ready from
    the end of its `start()` until its `stop()` begins; its composition root wraps it, with the
    settings' `ready_file` (None: nothing is written)."""

    def __init__(self, service: Runnable, ready_file: Path | None) -> None:
        self.service = service
        self._file = ready_file
        mark_not_ready(ready_file)

    async def start(self) -> None:
        await self.service.start()
        mark_ready(self._file)

    async def run(self, stop: asyncio.Event) -> None:
        await self.service.run(stop)

    async def stop(self) -> None:
        mark_not_ready(self._file)
        await self.service.stop()
