"""The life of one app: start, relay, restart with backoff, give up on a crash loop, stop.

Generations: every process started for the app gets the next generation (1, 2, …). `started`
carries the new generation; `exited`, `restarting`, `gave_up` and `stopped` carry the
generation of the process they are about (the last one started).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from services.app_supervisor.backoff import GiveUp, RestartTracker
from services.app_supervisor.config_check import LaunchSpec
from services.app_supervisor.reporter import Reporter
from shared.clock import now_iso
from shared.contracts.health import ProcessHealth, ProcessStatus
from shared.contracts.mcp_relay import ProcessEvent, ProcessState
from shared.contracts.signals import LifecycleState
from shared.errors import AuroraError
from shared.lifecycle import Lifecycle
from shared.observability import metrics
from shared.observability.logs import get_logger


class ManagedProcess(Protocol):
    """One generation of an app's process, as the keeper uses it (see `AppProcess`): started
    once, stopped once (`shared.lifecycle`), its exit code from `wait()` however it ended."""

    @property
    def pid(self) -> int: ...

    @property
    def running(self) -> bool: ...

    @property
    def stderr_tail(self) -> Sequence[str]: ...

    async def start(self) -> None: ...

    async def wait(self) -> int: ...

    async def stop(self) -> None: ...

    async def stop_now(self) -> None: ...


ProcessFactory = Callable[[LaunchSpec, int], ManagedProcess]
MAX_ERROR_CHARS = 1000
log = get_logger("aurora.app_supervisor")


class RestartRefused(AuroraError):
    """A restart cannot be done now (the supervisor is shutting down, or it timed out)."""


def describe_exit(code: int | None, stderr_tail: list[str]) -> str:
    """`exited with code 3; stderr: …` / `killed by signal SIGKILL` — for `last_error`."""
    if code is None:
        text = "did not start"
    elif code < 0:
        try:
            text = f"killed by signal {signal.Signals(-code).name}"
        except ValueError:
            text = f"killed by signal {-code}"
    else:
        text = f"exited with code {code}"
    if stderr_tail:
        text += "; stderr: " + " | ".join(stderr_tail[-3:])
    return text[:MAX_ERROR_CHARS]


class AppKeeper(Lifecycle[None]):
    """Owns one app's processes; `start()`, `restart()` on request, `stop()` (`shared.lifecycle`)."""

    def __init__(self, spec: LaunchSpec, tracker: RestartTracker, reporter: Reporter,
                 new_process: ProcessFactory, *, command: list[str]) -> None:
        super().__init__(f"the keeper of {spec.name}")
        self.spec = spec
        self._tracker = tracker
        self._reporter = reporter
        self._new_process = new_process
        self._command = command
        self._process: ManagedProcess | None = None
        self._wake = asyncio.Event()
        self._restart_reason: str | None = None
        self._waiters: list[asyncio.Future[int]] = []
        self._draining = False
        self._stopping = False
        self.generation = 0
        self.restarts = 0
        self.status: ProcessStatus = "starting"
        self.last_exit_code: int | None = None
        self.last_error: str | None = None

    # -- public ---------------------------------------------------------------------------

    def health(self) -> ProcessHealth:
        process = self._process
        return ProcessHealth(
            app=self.spec.app_id, instance=self.spec.instance, name=self.spec.name,
            status=self.status, command=self._command,
            pid=process.pid if process is not None and process.running else None,
            generation=self.generation, restarts=self.restarts,
            last_exit_code=self.last_exit_code, last_error=self.last_error, updated_at=now_iso(),
        )

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        task = asyncio.create_task(self._run(), name=f"app {self.spec.name}")
        task.add_done_callback(self._log_failure)
        parts.push_async_callback(self._stop_app, task)

    def _log_failure(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("app keeper failed: the app is no longer supervised", app=self.spec.name,
                      error=repr(task.exception()))

    def drain(self) -> None:
        """Shutdown has begun: an exit from now on is final, no more restarts."""
        self._draining = True

    def _restarted(self) -> None:
        self.restarts += 1
        metrics.app_restarts.add(1, {"app": self.spec.app_id, "instance": self.spec.instance})

    async def restart(self, reason: str, timeout: float) -> int:
        """Kill the current process (stdin closed, SIGTERM, SIGKILL after the grace period)
        and start a new one now, without backoff; returns the new generation."""
        if self._draining or self._stopping or not self.started:
            raise RestartRefused(f"app {self.spec.name}: not supervised now (the supervisor is starting or "
                                 "shutting down)")
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        self._tracker.reset()
        process = self._process
        if process is not None and process.running:
            self._restart_reason = reason
            self._wake.set()
            await process.stop_now()
        else:
            self._wake.set()  # waiting for a backoff or given up: start now
        try:
            return await asyncio.wait_for(asyncio.shield(waiter), timeout)
        except TimeoutError as exc:
            raise RestartRefused(
                f"app {self.spec.name}: no new process within {timeout:g} s ({self.last_error})"
            ) from exc
        finally:
            if waiter in self._waiters and not waiter.done():
                self._waiters.remove(waiter)

    async def _stop_app(self, task: asyncio.Task[None]) -> None:
        """Stop the process (if any) and announce `stopped`; the final health is kept."""
        self._stopping = True
        self._draining = True
        self._wake.set()
        process = self._process
        was_running = process is not None and process.running
        code = None
        if process is not None and was_running:
            await process.stop()
            code = await process.wait()
        await task
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(RestartRefused(f"app {self.spec.name}: stopped"))
        self._waiters.clear()
        if was_running:
            self.last_exit_code = code
            await self._report("stopped", "stopped", "process_exited",
                               reason="stopped by the supervisor", exit_code=code,
                               pid=process.pid if process is not None else None)
        else:
            status: ProcessStatus = "gave_up" if self.status == "gave_up" else "stopped"
            await self._report("stopped", status, None, reason="supervisor shut down")

    # -- the loop -------------------------------------------------------------------------

    async def _run(self) -> None:
        while not self._stopping:
            code = await self._run_once()
            if self._stopping:
                return
            requested, self._restart_reason = self._restart_reason, None
            await self._report_exit(code, requested)
            if self._draining:
                return
            if requested is not None:
                self._restarted()
                await self._report("restarting", "restarting", "process_restarting",
                                   reason=f"restart requested: {requested}", delay_seconds=0.0)
                continue
            decision = self._tracker.on_crash()
            if isinstance(decision, GiveUp):
                self.last_error = f"{decision.reason}; last: {self.last_error}"[:MAX_ERROR_CHARS]
                await self._report("gave_up", "gave_up", "process_gave_up", reason=self.last_error)
                await self._sleep(None)
                if not self._stopping:  # an operator asked for a restart
                    self._restarted()
                    await self._report("restarting", "restarting", "process_restarting",
                                       reason="restart requested after giving up", delay_seconds=0.0)
                continue
            self._restarted()
            await self._report("restarting", "restarting", "process_restarting",
                               reason=f"restarting in {decision.delay:g} s",
                               delay_seconds=decision.delay, attempt=decision.attempt)
            await self._sleep(decision.delay)

    async def _run_once(self) -> int | None:
        """Start one generation and wait for it to end; None if it could not even start."""
        self._wake.clear()
        self.generation += 1
        process = self._new_process(self.spec, self.generation)
        self._process = process
        try:
            await process.start()
        except OSError as exc:
            self.last_error = f"could not start {list(self.spec.argv)!r}: {exc}"[:MAX_ERROR_CHARS]
            return None
        pid = process.pid
        if self._stopping:  # stop() came while the process was being spawned
            await process.stop()
            return await process.wait()
        self.status = "running"
        await self._report("started", "running", "process_started", pid=pid)
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(self.generation)
        self._waiters.clear()
        code = await process.wait()
        await process.stop()  # it ended by itself (or was stopped): what it held is released
        return code

    async def _report_exit(self, code: int | None, requested: str | None) -> None:
        process = self._process
        tail = list(process.stderr_tail) if process is not None else []
        if code is not None:
            self.last_exit_code = code
            self.last_error = describe_exit(code, tail)
        reason = f"restart requested: {requested}" if requested is not None else self.last_error
        pid = process.pid if process is not None and code is not None else None
        await self._report("exited", "exited", "process_exited", reason=reason, exit_code=code,
                           pid=pid)

    async def _sleep(self, seconds: float | None) -> None:
        """Wait for the backoff (forever if None), a restart request, or stop."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    async def _report(self, state: ProcessState, status: ProcessStatus,
                      signal_state: LifecycleState | None, *, reason: str | None = None,
                      exit_code: int | None = None, pid: int | None = None,
                      **detail: Any) -> None:
        self.status = status
        event = ProcessEvent(
            app=self.spec.app_id, instance=self.spec.instance, state=state,
            generation=self.generation, pid=pid, exit_code=exit_code, reason=reason, at=now_iso(),
        )
        await self._reporter.report(event, self.health(), signal_state, detail)
