"""A service's readiness, as a file a container health check can test.

`AURORA_READY_FILE` names a file that the service writes once it serves (its consumers,
endpoints and apps are in place) and removes when it stops; compose.yaml sets it and each
Aurora service's health check is `test -f` of it, so `docker compose up --wait` and
`depends_on: {condition: service_healthy}` wait for a service that serves, not one that merely
runs. Unset (`aurora dev`, Kubernetes), nothing is written.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path

from shared.lifecycle import Runnable

READY_FILE = "AURORA_READY_FILE"


def ready_file(env: Mapping[str, str] | None = None) -> Path | None:
    raw = (os.environ if env is None else env).get(READY_FILE, "").strip()
    return Path(raw) if raw else None


def mark_ready(env: Mapping[str, str] | None = None) -> None:
    """The service serves: write the file (its content, the process id, is for a person)."""
    path = ready_file(env)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"{os.getpid()}\n", encoding="utf-8")


def mark_not_ready(env: Mapping[str, str] | None = None) -> None:
    """Before it serves (a restarted container keeps the last process's file) and when stopping."""
    path = ready_file(env)
    if path is not None:
        path.unlink(missing_ok=True)


class ReadyWhenStarted:
    """A service's lifecycle (`shared.service.run_until_stopped` drives it) that is ready from
    the end of its `start()` until its `stop()` begins; its composition root wraps it."""

    def __init__(self, service: Runnable) -> None:
        self.service = service
        mark_not_ready()

    async def start(self) -> None:
        await self.service.start()
        mark_ready()

    async def run(self, stop: asyncio.Event) -> None:
        await self.service.run(stop)

    async def stop(self) -> None:
        mark_not_ready()
        await self.service.stop()
