"""Ports for the tests' servers, and whether a process of the test itself listens on one (Linux /proc).

The tests' servers take ports from `free_port()`, which only says a port was free a moment ago:
another worker's server may bind it first. Then an answer on the port comes from that stranger,
and a test would use it; so readiness asks whether *our* process holds the listening socket.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import subprocess
import time
from pathlib import Path

LISTEN = "0A"  # the TCP state in /proc/net/tcp


def ephemeral_range() -> tuple[int, int]:
    """The ports the kernel hands out for `bind(0)` and outgoing connections."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def free_port_run(count: int, host: str = "127.0.0.1", *, attempts: int = 200) -> int:
    """The first of `count` consecutive ports that are free now (`aurora dev --cluster N` listens
    on `--port` + i).

    Taken below the kernel's ephemeral range: there no outgoing connection and no other test's
    `free_port()` is given one of them between this check and the servers' start, which is
    what happened to a run taken from `free_port()` upwards.
    """
    low, _ = ephemeral_range()
    for _ in range(attempts):
        first = random.randrange(10_000, low - count)
        with contextlib.ExitStack() as held:
            try:
                for port in range(first, first + count):
                    sock = held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
                    sock.bind((host, port))
            except OSError:
                continue
        return first
    raise AssertionError(f"no {count} consecutive free ports on {host} below {low}")


def listening_inodes(port: int) -> set[str]:
    """The inodes of the sockets that listen on `port`, on any local address."""
    inodes: set[str] = set()
    for table in (Path("/proc/net/tcp"), Path("/proc/net/tcp6")):
        try:
            rows = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == LISTEN and int(local.rsplit(":", 1)[1], 16) == port:
                inodes.add(inode)
    return inodes


def listens(pid: int, port: int) -> bool:
    """Whether process `pid` holds a socket listening on `port`."""
    wanted = {f"socket:[{inode}]" for inode in listening_inodes(port)}
    if not wanted:
        return False
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in descriptors:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                return True
        except OSError:
            continue
    return False


class PortTakenByAnother(AssertionError):
    """The process exited while another one listened on its port."""


def wait_listening(process: subprocess.Popen[bytes], port: int, what: str, *, log: Path | None = None,
                   timeout: float = 60.0) -> None:
    """Wait until `process` listens on `port`; raises PortTakenByAnother when it exited because
    another process had the port (the caller may try another), AssertionError when it exited
    otherwise or did not listen in time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if listens(process.pid, port):
            return
        if process.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:] if log is not None else ""
            if listening_inodes(port):
                raise PortTakenByAnother(f"{what} exited: another process listens on port {port}\n{tail}")
            raise AssertionError(f"{what} exited with {process.returncode}\n{tail}")
        time.sleep(0.05)
    raise AssertionError(f"{what} did not listen on port {port} within {timeout:g}s")
