"""Helpers for the gateway's process tests: app configs, tool calls on the wire, polling."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext
from nats.js.errors import NotFoundError

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.processes import ServiceProcess
from tests.harness.processes import logged as logged  # one wait-for-log for every test
from tests.harness.waiting import poll as poll  # one poll helper for every test

REPO = Path(__file__).resolve().parents[3]
PYTHON = sys.executable
BIN = Path(PYTHON).parent
ECHO_APP = REPO / "tests" / "apps" / "echo_app.py"
SILENT_APP = REPO / "tests" / "apps" / "silent_app.py"
SUPERVISOR = "services.app_supervisor"
GATEWAY = "services.mcp_gateway"
BRIDGE = "services.event_bridge"

# Seconds the silent app (it never answers `initialize`) is given before it counts as unhealthy.
SILENT_TIMEOUT = 1.0

FAST_RESTART = {"backoff_initial_seconds": 0.1, "backoff_max_seconds": 0.5, "max_restarts": 5,
                "window_seconds": 60}

Spawn = Callable[..., ServiceProcess]


def stdio(command: list[str], *, package: str, **extra: Any) -> dict[str, Any]:
    """An apps/config.yml entry for a stdio app the supervisor runs."""
    mcp = {"transport": "stdio", "command": command, **extra.pop("mcp", {})}
    return {"package": package, "mcp": mcp, "restart": extra.pop("restart", FAST_RESTART), **extra}


def echo_app(package: str = "test.echo", **extra: Any) -> dict[str, Any]:
    return stdio([PYTHON, str(ECHO_APP)], package=package, **extra)


def weather_app(**extra: Any) -> dict[str, Any]:
    return stdio([PYTHON, "-m", "apps.aurora_app_weather"], package="im.polaris.weather",
                 mcp={"cwd": str(REPO)}, **extra)


def time_app() -> dict[str, Any]:
    """The reference `mcp-server-time` from PyPI, exactly as installed."""
    return stdio([str(BIN / "mcp-server-time")], package="time")


def write_apps(folder: Path, apps: dict[str, dict[str, Any]], name: str = "apps.yml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump({"apps": apps}, allow_unicode=True), encoding="utf-8")
    return path


# -- processes ------------------------------------------------------------------------------
async def exited(process: ServiceProcess, timeout: float = 20.0) -> int:
    deadline = time.monotonic() + timeout
    while process.alive():
        if time.monotonic() > deadline:
            raise AssertionError(f"{process.module} still running after {timeout}s:\n{process.logs()[-4000:]}")
        await asyncio.sleep(0.05)
    code = process.returncode()
    assert code is not None
    return code


def cli(nats_url: str, *args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    """Run the `aurora` CLI as a user would (its own process, NATS_URL in the environment)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NATS_", "AURORA_"))}
    env.update(NATS_URL=nats_url, PYTHONIOENCODING="utf-8", COLUMNS="200")
    # `python -m aurora_cli.main` is the `aurora` console script, run from this checkout.
    return subprocess.run([PYTHON, "-m", "aurora_cli.main", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, cwd=REPO)


# -- the wire -------------------------------------------------------------------------------
def call_envelope(tool: str, arguments: Any, timeout: float | None = None,
                  context: dict[str, Any] | None = None) -> bytes:
    """A `tools/call` envelope written as plain JSON (not through the contracts under test)."""
    payload: dict[str, Any] = {"tool": tool, "arguments": arguments, "context": context or {}}
    if timeout is not None:
        payload["timeout_seconds"] = timeout
    return json.dumps({
        "header": {"protocol": "amp/1.0", "method": "tools/call", "message_id": str(uuid.uuid4()),
                   "timestamp": "2026-06-19T12:00:00+08:00", "source": {"app": "tests"}},
        "payload": payload,
    }, ensure_ascii=False).encode()


async def call(nc: NATS, subjects: Subjects, tool: str, arguments: Any, *, timeout: float = 10.0,
               wait: float | None = None) -> dict[str, Any]:
    """One operator call (no agent, on the operator subject); the reply's payload, decoded with the stdlib."""
    reply = await nc.request(subjects.operator_tool_call, call_envelope(tool, arguments, timeout),
                             timeout=wait or timeout + 5)
    envelope = json.loads(reply.data)
    assert envelope["header"]["method"] == "tools/result", envelope
    payload: dict[str, Any] = envelope["payload"]
    return payload


async def call_approved(nc: NATS, subjects: Subjects, tool: str, arguments: Any, *, timeout: float = 10.0,
                        approver: str = "ann") -> dict[str, Any]:
    """An operator call of a tool that waits for a person's grant (a `dangerous` one): asked under a
    task id of its own, granted by `approver` (registered as an approver; on a server without users
    anyone may publish on a person's subject), and asked again presenting the approval."""
    task = {"task_id": f"t-{uuid.uuid4().hex[:8]}"}
    held = json.loads((await nc.request(subjects.operator_tool_call, call_envelope(tool, arguments, timeout, task),
                                        timeout=timeout + 5)).data)["payload"]
    assert held["status"] == "needs_approval", held
    await admin_request(nc, subjects, "users", "add", {"name": approver, "roles": ["approver"]})
    granted = await admin_request(nc, Subjects(subjects.prefix, person=approver), "approvals", "grant",
                                  {"id": held["approval_id"]})
    assert granted["state"] == "granted", granted
    reply = await nc.request(subjects.operator_tool_call,
                             call_envelope(tool, arguments, timeout, {**task, "approval_id": held["approval_id"]}),
                             timeout=timeout + 5)
    payload: dict[str, Any] = json.loads(reply.data)["payload"]
    return payload


async def call_until_ok(nc: NATS, subjects: Subjects, tool: str, arguments: Any, *,
                        timeout: float = 20.0) -> dict[str, Any]:
    """Call until the status is `ok` (a session coming back); fails with the last reply."""
    deadline = time.monotonic() + timeout
    last: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        try:
            last = await call(nc, subjects, tool, arguments, timeout=2)
        except Exception as exc:  # no responders while a gateway starts
            last = {"status": f"no reply: {type(exc).__name__}"}
        if last["status"] == "ok":
            return last
        await asyncio.sleep(0.1)
    raise AssertionError(f"{tool} never answered ok within {timeout}s; last reply: {last}")


async def catalog(nc: NATS, subjects: Subjects, app: str | None = None) -> dict[str, dict[str, Any]]:
    tools = await admin_request(nc, subjects, "gateway", "tools", {"app": app})
    return {t["name"]: t for t in tools}



async def stored_events(js: JetStreamContext, subjects: Subjects) -> list[tuple[str, dict[str, Any]]]:
    """(subject, envelope) of every event in AMP_EVENTS now, oldest first, consuming nothing."""
    stream = subjects.stream("EVENTS")
    try:
        info = await js.stream_info(stream)
    except NotFoundError:
        return []
    found: list[tuple[str, dict[str, Any]]] = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        try:
            msg = await js.get_msg(stream, seq)
        except NotFoundError:
            continue
        if msg.subject and msg.data:
            found.append((msg.subject, json.loads(msg.data)))
    return found


async def supervised_pid(nc: NATS, subjects: Subjects, app_name: str) -> int:
    """The pid of an app's current process, from `amp.admin.supervisor.status`."""
    async def probe() -> int | None:
        for record in await admin_request(nc, subjects, "supervisor", "status"):
            if record["name"] == app_name and record["status"] == "running" and record.get("pid"):
                return int(record["pid"])
        return None

    pid: int = await poll(probe, what=f"a running process for {app_name}")
    return pid


def exact(a: Any, b: Any) -> bool:
    """JSON equality that also tells 1 from 1.0 and True from 1."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(exact(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(exact(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
