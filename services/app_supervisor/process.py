"""One generation of one app: its OS process.

stdout goes to the relay (`services.app_supervisor.relay`) as the pipe delivers it, and the
relay writes to stdin; stderr: each line goes into the supervisor's JSON logs with the app's
name, from the pipe's callback as well; the last lines are kept for the health record's
`last_error`.

The process runs in its own session (process group), so stopping it reaches its children too;
on Linux it also gets SIGKILL from the kernel if the supervisor dies without clean-up, so an
app is never left orphaned.

Its lifecycle is `shared.lifecycle`'s: `start()` spawns it and starts its relay (a relay that
cannot start kills the process, and the start's error goes on); `stop()` ends it (stdin closed,
SIGTERM, SIGKILL after the grace period); `wait()` is its exit code, however it ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections import deque
from collections.abc import Callable
from typing import Protocol, cast

from services.app_supervisor.config_check import LaunchSpec
from services.app_supervisor.framing import LineSplitter, Oversized
from shared.lifecycle import Lifecycle, NotStarted
from shared.observability.logs import get_logger

log = get_logger("aurora.app_supervisor.process")

STDERR_TAIL = 10
# How long the relay may take to hand over what the app wrote before it exited.
DRAIN_SECONDS = 0.5
# How long a stopped app may take to leave by itself once its stdin is closed (MCP's stdio
# shutdown), at most the grace period, before it gets SIGTERM.
STDIN_WAIT_SECONDS = 1.0


class Relay(Protocol):
    """What carries the app's stdin and stdout (`relay.stdio.StdioRelay`), made for its process."""

    line_limit: int  # the longest line it can carry
    stdout_relayed: asyncio.Event  # stdout ended and every line of it handed on

    async def start(self) -> None:
        """Begin writing to the app's stdin; OSError: it cannot."""

    def stdout(self, data: bytes) -> None: ...

    def stdout_ended(self) -> None: ...

    async def stop_input(self) -> None: ...

    async def stop(self) -> None: ...


RelayFactory = Callable[["AppProcess"], Relay]


def _parent_death_signal() -> Callable[[], None] | None:
    """A pre-exec hook asking Linux to SIGKILL the child when the supervisor dies."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    pr_set_pdeathsig = 1

    def hook() -> None:
        prctl(pr_set_pdeathsig, int(signal.SIGKILL))
        if os.getppid() != parent:  # the supervisor died between fork and prctl
            os._exit(1)

    return hook


class _ExitAwareProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """Signals the process's exit as soon as it happens. (`Process.wait()` also waits until
    every pipe is closed, which never happens while a descendant holds them.) What the app
    writes on stdout (fd 1) and stderr (fd 2) goes to `on_output` as the pipe delivers it, and
    each pipe's end to `on_closed`."""

    def __init__(self, loop: asyncio.AbstractEventLoop, on_output: Callable[[int, bytes], None],
                 on_closed: Callable[[int], None]) -> None:
        # The base class's stream readers get nothing (stdout and stderr go to `on_output`), so
        # their limit does not matter.
        super().__init__(limit=64 * 1024, loop=loop)
        self.exited = asyncio.Event()
        self._subprocess: asyncio.SubprocessTransport | None = None
        self._on_output = on_output
        self._on_closed = on_closed

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._subprocess = cast("asyncio.SubprocessTransport", transport)  # uvloop's is no subclass of it

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        if fd not in (1, 2):
            super().pipe_data_received(fd, data)
            return
        self._on_output(fd, data if isinstance(data, bytes) else data.encode())

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        super().pipe_connection_lost(fd, exc)
        if fd in (1, 2):
            self._on_closed(fd)

    def read_stdout(self, reading: bool) -> None:
        """Read the app's stdout again, or leave it unread for now (the app blocks on a full pipe)."""
        pipe = self._subprocess.get_pipe_transport(1) if self._subprocess is not None else None
        if isinstance(pipe, asyncio.ReadTransport) and not pipe.is_closing():
            (pipe.resume_reading if reading else pipe.pause_reading)()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()

    def close_pipes(self) -> None:
        if self._subprocess is not None:
            self._subprocess.close()


class AppProcess(Lifecycle[None]):
    """Start with `start()`, await `wait()` for the exit code, end with `stop()` (or `stop_now()`)."""

    def __init__(self, spec: LaunchSpec, generation: int, relay_for: RelayFactory, *, grace: float) -> None:
        super().__init__(f"the process of {spec.name} (generation {generation})")
        self._spec = spec
        self.generation = generation
        self._grace = grace  # SIGTERM → SIGKILL
        self._stdin_wait = STDIN_WAIT_SECONDS
        self._proc: asyncio.subprocess.Process | None = None
        self._protocol: _ExitAwareProtocol | None = None
        self._stderr_closed = asyncio.Event()
        self._exit: asyncio.Task[int] | None = None
        self._stdin_open = False
        self.stderr_tail: deque[str] = deque(maxlen=STDERR_TAIL)
        self.relay = relay_for(self)  # the pipes it is given answer "closed" until `start()`
        self._stderr_lines = LineSplitter(max(self.relay.line_limit, 64 * 1024))

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise NotStarted(self.name)
        return self._proc.pid

    @property
    def running(self) -> bool:
        """Started and not yet exited."""
        return self._proc is not None and self._proc.returncode is None

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        """Spawn the process and start its relay; when `start()` returns, the relay takes what is
        for the app (a client may send `initialize` right away). OSError: it could not be spawned,
        or its relay could not start (then it was killed)."""
        spec = self._spec
        loop = asyncio.get_running_loop()
        protocol = _ExitAwareProtocol(loop, self._on_output, self._on_closed)
        transport, _ = await loop.subprocess_exec(
            lambda: protocol,
            *spec.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=spec.cwd,
            env=dict(spec.env),
            start_new_session=True,
            preexec_fn=_parent_death_signal(),
        )
        self._protocol = protocol
        self._proc = asyncio.subprocess.Process(transport, protocol, loop)
        self._stdin_open = True
        self._exit = asyncio.create_task(self._reap(), name=f"reap {spec.name}#{self.generation}")
        parts.push_async_callback(self._end)
        try:
            await self.relay.start()
        except OSError:  # no relay, no process: killed at once rather than asked to leave
            self._signal_group(signal.SIGKILL)
            raise

    async def wait(self) -> int:
        """The exit code once the process exited and the relay drained (negative: the signal
        that killed it)."""
        if self._exit is None:
            raise NotStarted(self.name)
        return await asyncio.shield(self._exit)

    async def stop_now(self) -> None:
        """`stop()` without the courtesy wait after closing stdin (a restart asked for now)."""
        self._stdin_wait = 0.0
        await self.stop()

    async def _end(self) -> None:
        """Close stdin (and give the app a moment to leave by itself, as MCP's stdio shutdown
        suggests), then SIGTERM the process group, then SIGKILL it after the grace period; done
        once the process exited and its relay drained."""
        assert self._proc is not None and self._exit is not None
        grace = self._grace
        if not self._exit.done():
            await self._close_stdin()
            if not await self._exited_within(min(self._stdin_wait, grace)):
                self._signal_group(signal.SIGTERM)
                if not await self._exited_within(grace):
                    log.warning("app ignored SIGTERM, killing it", app=self._spec.name,
                                pid=self._proc.pid, grace_seconds=grace)
                    self._signal_group(signal.SIGKILL)
        await self.wait()

    async def _exited_within(self, seconds: float) -> bool:
        assert self._protocol is not None
        try:
            await asyncio.wait_for(self._protocol.exited.wait(), seconds)
        except TimeoutError:
            return False
        return True

    def _signal_group(self, signum: signal.Signals) -> None:
        if self._proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signum)

    async def _reap(self) -> int:
        assert self._proc is not None and self._protocol is not None
        await self._protocol.exited.wait()
        code = self._proc.returncode
        assert code is not None
        # Whatever the app left behind in its group dies with it: no orphans.
        self._signal_group(signal.SIGKILL)
        self._stdin_open = False
        await self.relay.stop_input()
        drained = [asyncio.ensure_future(done.wait()) for done in (self.relay.stdout_relayed, self._stderr_closed)]
        _, pending = await asyncio.wait(drained, timeout=DRAIN_SECONDS)
        for task in pending:  # a descendant that left the group still holds the pipes
            task.cancel()
        await self.relay.stop()
        self._protocol.close_pipes()
        return code

    async def _close_stdin(self) -> None:
        if self._proc is None or self._proc.stdin is None or not self._stdin_open:
            return
        self._stdin_open = False
        with contextlib.suppress(OSError, RuntimeError):
            self._proc.stdin.close()
            await self._proc.stdin.wait_closed()

    # -- what the relay needs (`relay.stdio.Pipes`) ------------------------------------------
    def stdin_unread(self) -> int | None:
        stdin = self._proc.stdin if self._proc is not None else None
        if stdin is None or not self._stdin_open:
            return None
        return stdin.transport.get_write_buffer_size()

    def write_stdin(self, line: bytes) -> None:
        stdin = self._proc.stdin if self._proc is not None else None
        if stdin is None:
            return
        try:
            stdin.write(line)
        except (OSError, RuntimeError) as exc:  # the app is going away; `exited` follows
            log.warning("writing to app stdin failed", app=self._spec.name, error=str(exc))

    def read_stdout(self, reading: bool) -> None:
        if self._protocol is not None:
            self._protocol.read_stdout(reading)

    # -- the pipes' callbacks ------------------------------------------------------------------
    def _on_output(self, fd: int, data: bytes) -> None:
        """Called by a pipe with what the app wrote: stdout to the relay, each stderr line to the logs."""
        if fd == 1:
            self.relay.stdout(data)
            return
        for line in self._stderr_lines.feed(data):
            self._log_stderr(line)

    def _on_closed(self, fd: int) -> None:
        if fd == 1:
            self.relay.stdout_ended()
            return
        for line in self._stderr_lines.end():
            self._log_stderr(line)
        self._stderr_closed.set()

    def _log_stderr(self, line: bytes | Oversized) -> None:
        name = self._spec.name
        if isinstance(line, Oversized):
            log.warning("app stderr line too long, dropped", app=name, size=line.size)
            return
        text = line.decode("utf-8", errors="replace").rstrip("\r")
        self.stderr_tail.append(text)
        log.info("app stderr", app=name, instance=self._spec.instance, generation=self.generation, line=text)
