"""Starting Aurora's service processes for tests, with logs kept for the failure report."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO

from shared.config.service_env import process_variable
from tests.harness.waiting import TimedOut, poll, poll_sync

REPO = Path(__file__).resolve().parents[2]


class ServiceProcess:
    """One `python -m services.<name>` process; its stderr/stdout go to a log file. It is told
    (AURORA_READY_FILE, shared/readiness.py) to write `ready_path` while it serves: `wait_ready`
    and `ready` wait for that file, as a container's health check does."""

    def __init__(self, module: str, env: dict[str, str], log_dir: Path, tag: str | None = None,
                 args: list[str] | None = None, launcher: tuple[str, ...] = ()) -> None:
        self.module = module
        self.tag = tag or module.replace(".", "_")
        self.args = args or []
        # A module that runs the service's module itself (a profiler): `python -m <launcher> <module>`.
        self.launcher = list(launcher)
        self.log_path = log_dir / f"{self.tag}.log"
        self.ready_path = log_dir / f"{self.tag}.ready"
        self.env = {**env, "AURORA_READY_FILE": str(self.ready_path)}
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    def start(self) -> ServiceProcess:
        self._close_log()
        # A restart's file must be the new process's: the one before it may have been killed serving.
        self.ready_path.unlink(missing_ok=True)
        self._log = open(self.log_path, "ab")  # noqa: SIM115 - closed in _close_log
        self._process = subprocess.Popen(
            [sys.executable, "-m", *self.launcher, self.module, *self.args],
            cwd=REPO,
            env=self.env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def returncode(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def kill(self) -> None:
        """SIGKILL, like a crash: no clean-up runs."""
        if self.alive():
            assert self._process is not None
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def terminate(self, timeout: float = 15.0) -> int | None:
        self.signal_stop()
        return self.wait_stopped(timeout)

    def signal_stop(self) -> None:
        """SIGTERM, without waiting (`wait_stopped` waits)."""
        if self.alive():
            assert self._process is not None
            self._process.send_signal(signal.SIGTERM)

    def wait_stopped(self, timeout: float) -> int | None:
        """Wait for the exit after `signal_stop`; SIGKILL after `timeout`."""
        if not self.alive():
            self._close_log()
            return self.returncode()
        assert self._process is not None
        try:
            return self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return self.returncode()
        finally:
            self._close_log()

    def wait(self, timeout: float) -> int:
        assert self._process is not None
        return self._process.wait(timeout)

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_for_log(self, needle: str, timeout: float = 20.0) -> None:
        try:
            poll_sync(lambda: self.has_logged(needle), timeout=timeout, what=f"{self.module} to log {needle!r}")
        except TimedOut:
            raise AssertionError(f"{self.module} never logged {needle!r}:\n{self.logs()[-4000:]}") from None

    def is_ready(self) -> bool:
        """Whether it serves (its ready file is there); a process that exited before fails."""
        if not self.alive():
            raise AssertionError(f"{self.tag} exited ({self.returncode()}):\n{self.logs()[-4000:]}")
        return self.ready_path.exists()

    def wait_ready(self, timeout: float = 40.0) -> ServiceProcess:
        try:
            poll_sync(self.is_ready, timeout=timeout, what=f"{self.tag} to serve")
        except TimedOut:
            raise AssertionError(f"{self.tag} never served:\n{self.logs()[-4000:]}") from None
        return self

    async def ready(self, timeout: float = 40.0) -> ServiceProcess:
        """`wait_ready` without blocking the test's event loop."""

        async def serves() -> bool:
            return self.is_ready()

        try:
            await poll(serves, timeout=timeout, what=f"{self.tag} to serve")
        except TimedOut:
            raise AssertionError(f"{self.tag} never served:\n{self.logs()[-4000:]}") from None
        return self

    def has_logged(self, needle: str) -> bool:
        """Whether the log holds `needle`; a process that exited without logging it fails."""
        if needle in self.logs():
            return True
        if not self.alive():
            raise AssertionError(f"{self.module} exited ({self.returncode()}):\n{self.logs()[-4000:]}")
        return False


# The root conftest's `spawn` fixture: `spawn("services.event_bridge", tag="bridge-1", **env)`.
Spawn = Callable[..., ServiceProcess]
SUPERVISOR = "services.app_supervisor"


def stop_services(processes: Iterable[ServiceProcess], timeout: float = 20.0) -> None:
    """SIGTERM every process at once and wait for them all, the app supervisors last: a gateway
    closes its MCP sessions through its supervisor as it stops. Together, not one after the
    other: each takes up to a second to drain (its fetch in flight ends first)."""
    processes = list(processes)
    for wave in ([p for p in processes if p.module != SUPERVISOR], [p for p in processes if p.module == SUPERVISOR]):
        for process in wave:
            process.signal_stop()
        deadline = time.monotonic() + timeout
        for process in wave:
            process.wait_stopped(max(0.0, deadline - time.monotonic()))


def service_env(nats_url: str, **extra: str) -> dict[str, str]:
    """What a service process needs to run (as the launchers give it: shared/config/service_env.py), the
    bus and `extra`; nothing else of the test's environment."""
    env = {k: v for k, v in os.environ.items() if process_variable(k)}
    env.update({"NATS_URL": nats_url, "PYTHONUNBUFFERED": "1", "AURORA_LOG_LEVEL": "INFO"})
    env.update(extra)
    return env


async def logged(process: ServiceProcess, needle: str, timeout: float = 30.0) -> None:
    """Wait (without blocking the loop) until the process's log holds `needle`."""

    async def holds() -> bool:
        return process.has_logged(needle)

    try:
        await poll(holds, timeout=timeout, what=f"{process.module} to log {needle!r}")
    except TimedOut:
        raise AssertionError(f"{process.module} never logged {needle!r}:\n{process.logs()[-4000:]}") from None


def process_children() -> dict[int, list[int]]:
    """Each live process's child pids, read from /proc (Linux)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    return children


def descendants(pid: int, children: dict[int, list[int]] | None = None) -> set[int]:
    """Every live process below `pid`."""
    tree = process_children() if children is None else children
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found
