"""An app's `AppProcess` on `shared.lifecycle`, in process with a real OS process and the real
stdio relay: started once and stopped once, and a start whose relay cannot start leaves no process
behind (the error goes on)."""

from __future__ import annotations

import os
import sys

import nats
import pytest
from nats.aio.client import Client as NATS

from services.app_supervisor.config_check import LaunchSpec
from services.app_supervisor.process import AppProcess
from services.app_supervisor.relay.stdio import Pipes, StdioRelay
from shared.contracts.subjects import Subjects
from tests.harness.waiting import poll
from tests.integration.app_supervisor.helpers import pid_alive

# Leaves when its stdin is closed, as an MCP stdio server does.
UNTIL_STDIN_ENDS = (sys.executable, "-c", "import sys; sys.stdin.read()")


def process_on(nc: NATS, subjects: Subjects) -> tuple[AppProcess, StdioRelay]:
    spec = LaunchSpec(name="reader", app_id="test.reader", instance="default", argv=UNTIL_STDIN_ENDS,
                      env=dict(os.environ), cwd=None, program=sys.executable)
    relays: list[StdioRelay] = []

    def relay_for(pipes: Pipes) -> StdioRelay:
        relays.append(StdioRelay(nc, subjects, spec, 1, pipes))
        return relays[-1]

    process = AppProcess(spec, 1, relay_for, grace=5)
    return process, relays[0]


async def test_a_process_is_started_once_and_stopped_once(nc: NATS, subjects: Subjects) -> None:
    process, relay = process_on(nc, subjects)
    await process.start()
    pid = process.pid
    await process.start()  # nothing more: the same process
    assert process.pid == pid and process.running and relay.started
    await process.stop()
    await process.stop()
    assert await process.wait() == 0  # it left by itself once its stdin was closed
    assert not process.started and not process.running and not pid_alive(pid)
    assert not relay.started


async def test_a_process_whose_relay_cannot_start_is_killed_and_the_start_fails(
        nats_url: str, subjects: Subjects) -> None:
    closed = await nats.connect(nats_url)
    await closed.close()  # the relay cannot subscribe
    process, relay = process_on(closed, subjects)
    with pytest.raises(OSError, match="cannot relay"):
        await process.start()
    pid = process.pid  # it was spawned
    assert not process.started and not relay.started
    assert await process.wait() < 0  # killed by a signal, not left running

    async def gone() -> bool:
        return not pid_alive(pid)

    await poll(gone, timeout=10, what="the spawned process to be gone")
