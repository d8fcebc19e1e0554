"""nats-server restarted mid-load on its file store: every service reconnects, nothing persisted
is lost."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.chaos.kit import loaded
from tests.chaos.load import LoadRun
from tests.chaos.model import Outcome, Scenario

DOWN = 1.0  # seconds the server is away


async def restart(run: LoadRun) -> None:
    await run.at(0.35)
    await asyncio.to_thread(run.stack.kill_nats)
    run.mark_fault()
    await asyncio.sleep(DOWN)
    await asyncio.to_thread(run.stack.start_nats)


async def nats_restart(workdir: Path, scale: float) -> Outcome:
    return await loaded(workdir, scale, name="nats-restart",
                        faults_text=f"nats-server SIGKILL, {DOWN:g} s down, same store",
                        faults=restart, rate=10.0, seconds=15.0)


SCENARIOS = [Scenario("nats-restart", nats_restart)]
