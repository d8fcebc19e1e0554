"""An app's stdout relayed from the pipe's callback (services/app_supervisor/process.py), in process
against a real nats-server and a real app process: while NATS cannot take the lines they wait in
order, past the backlog limit the pipe is left unread (the app blocks), and once NATS is back
every line arrives, in the order written."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import nats
import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from aurora_cli.localnats import LocalNats
from services.app_supervisor.config_check import LaunchSpec
from services.app_supervisor.process import AppProcess
from services.app_supervisor.relay import stdio
from services.app_supervisor.relay.stdio import Pipes, StdioRelay
from shared.contracts.subjects import Subjects
from shared.nats import write_through
from shared.nats.inline_subscription import subscribe_inline
from tests.harness.waiting import poll

LINES = 30_000  # about 30 MB: more than the sockets, nats-py's buffer and the backlog hold together

FLOOD = f"""
import sys
sys.stdin.readline()  # the test says when
for n in range({LINES}):
    sys.stdout.write('{{"n": %d, "pad": "%s"}}\\n' % (n, "x" * 1000))
sys.stdout.flush()
"""


@dataclass
class Relay:
    server: LocalNats
    nc: NATS
    process: AppProcess
    stdio: StdioRelay  # the process's relay
    got: list[bytes]  # what arrived on the app's s2c, in order


@asynccontextmanager
async def relay_of(tmp_path: Path, name: str, argv: tuple[str, ...]) -> AsyncIterator[Relay]:
    """An `AppProcess` for `argv` (not started) on its own nats-server, with what it relays collected."""
    server = LocalNats(tmp_path / "jetstream")
    server.start()
    nc = await nats.connect(server.url)
    got: list[bytes] = []

    def received(msg: Msg) -> None:
        got.append(msg.data)

    subjects = Subjects("amp")
    await subscribe_inline(nc, subjects.mcp(f"test.{name}", "default", "s2c"), received)
    await write_through.flush(nc)
    spec = LaunchSpec(name=name, app_id=f"test.{name}", instance="default", argv=argv, env=dict(os.environ),
                      cwd=None, program=sys.executable)
    try:
        relays: list[StdioRelay] = []

        def relay_for(pipes: Pipes) -> StdioRelay:
            relays.append(StdioRelay(nc, subjects, spec, 1, pipes))
            return relays[-1]

        process = AppProcess(spec, 1, relay_for, grace=5)
        yield Relay(server, nc, process, relays[0], got)
    finally:
        await nc.close()
        server.stop()


async def test_an_app_that_outpaces_nats_is_left_unread_and_loses_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Above nats-py's own buffer (2 MiB): the lines waiting are then published across its flushes,
    # between which new lines must still queue behind them.
    monkeypatch.setattr(stdio, "STDOUT_BACKLOG_BYTES", 4 * 1024 * 1024)
    app = tmp_path / "flood.py"
    app.write_text(FLOOD)
    async with relay_of(tmp_path, "flood", (sys.executable, str(app))) as relay:
        flood, got, server = relay.process, relay.got, relay.server
        await flood.start()
        assert server.pid is not None and flood._proc is not None and flood._proc.stdin is not None
        os.kill(server.pid, signal.SIGSTOP)  # NATS takes nothing from here on
        try:
            flood._proc.stdin.write(b"go\n")

            async def left_unread() -> bool:
                return relay.stdio.stdout_paused

            await poll(left_unread, timeout=60, what="the app's stdout left unread while NATS is behind")
            assert flood.running  # blocked on its full pipe, not done
        finally:
            os.kill(server.pid, signal.SIGCONT)

        async def all_in() -> bool:
            return len(got) >= LINES

        await poll(all_in, timeout=120, what="every line once NATS is back")
        assert [int(line[6:line.index(b",")]) for line in got] == list(range(LINES))
        assert all(line.endswith(b'x"}') for line in got)
        assert not relay.stdio.stdout_paused
        await flood.stop()
        assert await flood.wait() == 0


async def test_a_line_that_comes_while_earlier_ones_wait_goes_behind_them(tmp_path: Path) -> None:
    async with relay_of(tmp_path, "order", (sys.executable,)) as relay:  # never started: fed by hand
        relay.stdio._stdout_waiting.append((b'{"n":0}', None))  # as if NATS could not take it a moment ago
        relay.stdio._stdout_waiting_bytes = 7
        relay.stdio.stdout(b'{"n":1}\n{"n":2}\n')  # NATS could take these now: they go behind it

        async def all_in() -> bool:
            return len(relay.got) >= 3

        await poll(all_in, timeout=10, what="the waiting line and the two after it")
        assert relay.got == [b'{"n":0}', b'{"n":1}', b'{"n":2}']
