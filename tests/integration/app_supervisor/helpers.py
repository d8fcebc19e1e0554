"""Helpers for the supervisor's integration tests: configs, event recording, MCP messages."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.errors import KeyNotFoundError, NotFoundError

from shared.contracts.subjects import Subjects, app_token
from shared.nats import write_through
from tests.harness.processes import ServiceProcess
from tests.harness.waiting import poll as poll  # one poll helper for every test

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
PYTHON = sys.executable
ECHO_APP = REPO / "tests" / "apps" / "echo_app.py"
SILENT_APP = REPO / "tests" / "apps" / "silent_app.py"
RELAY_APP = HERE / "apps" / "relay_app.py"
MODULE = "services.app_supervisor"

FAST_RESTART = {"backoff_initial_seconds": 0.1, "backoff_max_seconds": 0.4, "max_restarts": 3,
                "window_seconds": 60}


def app_entry(command: list[str], **extra: Any) -> dict[str, Any]:
    mcp = {"transport": "stdio", "command": command, **extra.pop("mcp", {})}
    return {"mcp": mcp, "restart": extra.pop("restart", FAST_RESTART), **extra}


def write_config(folder: Path, apps: dict[str, dict[str, Any]]) -> Path:
    path = folder / "apps.yml"
    path.write_text(yaml.safe_dump({"apps": apps}, allow_unicode=True), encoding="utf-8")
    return path


def initialize(request_id: int = 1) -> bytes:
    return json.dumps({
        "jsonrpc": "2.0", "id": request_id, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "supervisor-test", "version": "0"}},
    }, separators=(",", ":")).encode()


@dataclass
class Seen:
    at: float
    channel: str  # proc | sess | s2c
    data: dict[str, Any] | bytes


class Channels:
    """Records everything on `<p>.mcp.<app>.<instance>.{proc,sess,s2c}` in arrival order
    (one subscription, so the order is the server's)."""

    def __init__(self, nc: NATS, subjects: Subjects, app: str, instance: str = "default") -> None:
        self.nc = nc
        self.subjects = subjects
        self.app = app
        self.instance = instance
        self.seen: list[Seen] = []
        self._changed = asyncio.Event()

    async def start(self) -> Channels:
        base = self.subjects.mcp(self.app, self.instance, "proc").rsplit(".", 1)[0]
        await self.nc.subscribe(base + ".*", cb=self._on)
        await write_through.flush(self.nc)
        return self

    async def _on(self, msg: Msg) -> None:
        channel = msg.subject.rsplit(".", 1)[1]
        if channel == "c2s":
            return
        data: dict[str, Any] | bytes = msg.data if channel == "s2c" else json.loads(msg.data)
        self.seen.append(Seen(time.monotonic(), channel, data))
        self._changed.set()

    def proc(self) -> list[dict[str, Any]]:
        return [s.data for s in self.seen if s.channel == "proc" and isinstance(s.data, dict)]

    def states(self) -> list[str]:
        return [e["state"] for e in self.proc()]

    def replies(self) -> list[bytes]:
        return [s.data for s in self.seen if s.channel == "s2c" and isinstance(s.data, bytes)]

    async def wait(self, predicate: Callable[[], Any], timeout: float = 30.0, what: str = "") -> Any:
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for {what or predicate}: seen {self.seen!r}"[:4000])
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.2))

    async def wait_state(self, state: str, generation: int | None = None,
                         timeout: float = 10.0) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            for event in self.proc():
                if event["state"] == state and generation in (None, event["generation"]):
                    return event
            return None

        event: dict[str, Any] = await self.wait(found, timeout, f"proc {state} gen {generation}")
        return event

    async def send(self, data: bytes) -> None:
        await self.nc.publish(self.subjects.mcp(self.app, self.instance, "c2s"), data)

    async def announce(self, state: str) -> None:
        """Act as the gateway: publish a SessionEvent."""
        event = {"app": self.app, "instance": self.instance, "state": state,
                 "at": "2026-01-01T00:00:00+00:00"}
        await self.nc.publish(self.subjects.mcp(self.app, self.instance, "sess"),
                              json.dumps(event).encode())
        await write_through.flush(self.nc)


@dataclass
class Running:
    """The `relay` fixture's supervisor, the relay app's channels, its generation 1 started."""

    supervisor: ServiceProcess
    channels: Channels
    started: dict[str, Any]


def log_records(text: str) -> list[dict[str, Any]]:
    records = []
    for line in text.splitlines():
        if line.startswith("{"):
            try:
                records.append(json.loads(line))
            except ValueError:
                continue
    return records


def pid_alive(pid: int) -> bool:
    """Alive and not a zombie (a reparented zombie may wait for a reaper that never comes)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def stream_messages(js: JetStreamContext, stream: str, prefix: str = "") -> list[tuple[str, Any]]:
    """(subject, decoded JSON) of every message stored in `stream`, oldest first, without
    consuming anything."""
    info = await js.stream_info(stream)
    found: list[tuple[str, Any]] = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            msg = await js.get_msg(stream, seq)
        except NotFoundError:
            continue
        if msg.subject and msg.subject.startswith(prefix) and msg.data is not None:
            found.append((msg.subject, json.loads(msg.data)))
    return found



async def health_record(js: JetStreamContext, subjects: Subjects, app: str,
                        instance: str = "default") -> dict[str, Any] | None:
    kv = await js.key_value(subjects.stream("APPS"))
    try:
        entry = await kv.get(f"proc.{app_token(app)}.{instance}")
    except KeyNotFoundError:
        return None
    return json.loads(entry.value) if entry.value else None


def mcp_call(request_id: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message, separators=(",", ":")).encode()


INITIALIZED = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
