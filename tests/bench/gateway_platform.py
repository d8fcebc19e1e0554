"""What `make bench-gateway` and `make profile-gateway` run and measure: a nats-server, the
app-supervisor and the mcp-gateway serving the echo app (built by the tests' `StackBuilder`,
each waited for until it serves), the two round-trip responders of the floor
(tests/bench/round_trips.py), and the CPU each of these processes spent, read from /proc."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import IO

from tests.bench.common import REPO
from tests.bench.round_trips import RAW_RESPONDER, RAW_SUBJECT, RESPONDER, SUBJECT
from tests.bench.stacks import BenchStack, bench_stack
from tests.harness.stack import StackBuilder

ECHO_APP = REPO / "tests" / "apps" / "echo_app.py"
PROFILED = ("supervisor", "gateway")  # what runs under tests.bench.cpu_profiled when profiled

Call = Callable[[], Awaitable[None]]


class Platform:
    """The services serving the echo app (as `bench.echo`) and the responders. `profiled`: the
    supervisor and the gateway run under tests/bench/cpu_profiled.py (SIGUSR1 starts profiling,
    SIGUSR2 writes `profile_path(tag)`)."""

    def __init__(self, folder: Path, profiled: bool = False) -> None:
        self.folder = folder
        self.profiled = profiled
        self.event_loop = os.environ.get("BENCH_EVENT_LOOP", "uvloop")
        self._responders: list[tuple[subprocess.Popen[bytes], IO[bytes]]] = []
        self._exit = ExitStack()
        self._stack: BenchStack | None = None

    @property
    def stack(self) -> BenchStack:
        if self._stack is None:
            raise RuntimeError("the platform is not started")
        return self._stack

    @property
    def url(self) -> str:
        return self.stack.url

    def profile_path(self, tag: str) -> Path:
        return self.folder / f"{tag}.prof"

    def _services(self, builder: StackBuilder) -> StackBuilder:
        apps = {"echo": {"package": "bench.echo",
                         "mcp": {"transport": "stdio", "command": [sys.executable, str(ECHO_APP)]}}}
        builder = (builder.apps(apps).env(AURORA_LOG_LEVEL="WARNING", AURORA_EVENT_LOOP=self.event_loop)
                   .supervisor().gateway())
        if self.profiled:
            for tag in PROFILED:
                builder = builder.launched_by(tag, "tests.bench.cpu_profiled", str(self.profile_path(tag)))
        return builder

    def start(self) -> None:
        self._stack = self._exit.enter_context(bench_stack(self.folder, self._services))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("NATS_", "AURORA_"))}
        env.update(PYTHONUNBUFFERED="1")
        for name, script, responds_on in (("responder", RESPONDER, SUBJECT),
                                          ("raw-responder", RAW_RESPONDER, RAW_SUBJECT)):
            log = (self.folder / f"{name}.log").open("wb")
            responder = subprocess.Popen([sys.executable, "-c", script, self.url, responds_on, self.event_loop],
                                         cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
            self._responders.append((responder, log))

    async def ready(self, calls: Sequence[Call], timeout: float = 60) -> None:
        """Until each of `calls` is answered: the services serve (their ready files) before
        `start` returns, the echo app's tool and the responders may take longer."""
        deadline = time.monotonic() + timeout
        for call in calls:
            await self._until_answered(call, deadline)

    async def _until_answered(self, call: Call, deadline: float) -> None:
        while True:
            try:
                await call()
                return
            except Exception:
                exited = [p.args for p, _ in self._responders if p.poll() is not None]
                exited += [p.tag for p in self.stack.running.processes.values() if not p.alive()]
                if exited:
                    raise RuntimeError(f"{exited!r} exited; see {self.folder}") from None
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.2)

    def stop(self) -> None:
        """The responders, then the services (the gateway first) and nats-server."""
        for process, log in self._responders:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            log.close()
        self._exit.close()


def children_of(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def role_of(pid: int) -> str | None:
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    text = " ".join(a.decode(errors="replace") for a in args)
    for needle, role in (("nats-server", "nats-server"), ("services.mcp_gateway", "gateway"),
                         ("services.app_supervisor", "supervisor"), ("echo_app.py", "echo app")):
        if needle in text:
            return role
    return None


def cpu_seconds() -> dict[str, float]:
    """CPU time (user + system) so far of this process and every process of the benchmark;
    the echo app under the supervisor is told apart from the one the direct client runs."""
    tick = os.sysconf("SC_CLK_TCK")

    def cpu(pid: int) -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    usage = {"bench client": cpu(os.getpid())}
    for pid in children_of(os.getpid()):
        role = role_of(pid)
        if role is None:
            continue
        usage["echo app (direct)" if role == "echo app" else role] = cpu(pid)
        if role == "supervisor":
            for child in children_of(pid):
                if role_of(child) == "echo app":
                    usage["echo app (supervised)"] = cpu(child)
    return usage


def cpu_per_call(before: dict[str, float], after: dict[str, float], calls: int) -> dict[str, float]:
    return {name: (after[name] - before.get(name, 0.0)) / calls * 1000 for name in after
            if after[name] - before.get(name, 0.0) > 0}
