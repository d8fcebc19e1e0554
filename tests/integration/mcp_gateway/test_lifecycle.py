"""Start-up and shutdown of the gateway beside the supervisor: duplicate prefixed names fail
start-up naming both apps; a gateway started before the supervisor serves at once and connects
each app once its process runs; on SIGTERM every session is closed before its process is stopped."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from shared.contracts.subjects import Subjects, app_token
from shared.nats import write_through
from tests.harness.cli_here import run_cli_here
from tests.harness.stack import Stack
from tests.harness.tool_pool import read_stream
from tests.integration.mcp_gateway.helpers import (
    call,
    echo_app,
    exited,
    poll,
    time_app,
    weather_app,
    write_apps,
)


async def test_two_apps_exposing_the_same_prefixed_name_fail_start_up_naming_both(
    nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path
) -> None:
    config = write_apps(tmp_path, {
        "dup-a": echo_app("dup", instance="a"),
        "dup-b": echo_app("dup", instance="b"),
    })
    sessions: list[tuple[str, str]] = []

    async def record(msg: Msg) -> None:
        event = json.loads(msg.data)
        sessions.append((event["instance"], event["state"]))

    await nc.subscribe(subjects.mcp("dup", "a", "sess").replace(".a.", ".*."), cb=record)
    stack.launch("supervisor", apps=config)
    gateway = stack.launch("gateway", apps=config)

    assert await exited(gateway) != 0
    logs = gateway.logs()
    assert "duplicate prefixed tool names" in logs, logs[-3000:]
    assert "'dup-a'" in logs and "'dup-b'" in logs and "'dup.echo'" in logs, logs[-3000:]
    assert '"serving"' not in logs
    # The failed gateway closed what it had opened: the supervisor will not wait for it.
    await write_through.flush(nc)
    assert {("a", "closed"), ("b", "closed")} <= set(sessions), sessions


async def test_a_gateway_started_before_the_supervisor_serves_at_once_and_connects_once_the_app_runs(
    nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path
) -> None:
    """As `aurora dev` and compose start them: the supervisor waits for the demo, which waits for
    the gateway. The app's health timeout is longer than the wait for the gateway to serve, so
    only nats-server's "no responders" for the `initialize` can end its first attempt in time."""
    config = write_apps(tmp_path, {"test.echo": echo_app(mcp={"health_timeout_seconds": 120})})
    gateway = await stack.launch("gateway", apps=config).ready(45)

    shown = run_cli_here(["apps", "--json"], {"NATS_URL": stack.url})
    assert shown.returncode == 0, shown.stderr
    echo = {row["app"]: row for row in json.loads(shown.stdout)}["test.echo"]
    # Still connecting, not "initialize refused" (the SDK's "Connection closed"), which would ask
    # for a restart, nor unavailable, which would say `app.init_failed` at every start.
    assert echo["session"] == "connecting", echo
    assert echo["last_error"].startswith("initialize not delivered: no app-supervisor runs the app's process"), echo

    stack.launch("supervisor", apps=config)

    async def connected() -> bool:
        shown = run_cli_here(["apps", "--json"], {"NATS_URL": stack.url})
        return shown.returncode == 0 and any(
            row["app"] == "test.echo" and row["session"] == "connected" for row in json.loads(shown.stdout))

    await poll(connected, timeout=30, interval=0.2, what="the echo app's session connected once its process runs")
    result = await call(nc, subjects, "test.echo.echo", {"after": "the supervisor"})
    assert result["status"] == "ok", result
    assert gateway.alive()
    # The app's lifecycle as stored for the event-bridge, up to the gateway's `connected`: the
    # supervisor's process start, and no failure before it.
    read, _ = await read_stream(nc, subjects.stream("SIGNALS"), "amp.sig.test_echo.lifecycle",
                                lambda signal: signal["state"] == "connected")
    assert [signal["state"] for _, signal in read] == ["process_started", "connected"], read


async def test_sigterm_to_both_closes_every_session_before_its_process_stops(
    nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path
) -> None:
    apps = {"im.polaris.weather": weather_app(), "time": time_app(), "test.echo": echo_app()}
    config = write_apps(tmp_path, {app["package"]: app for app in apps.values()})
    supervisor = stack.launch("supervisor", apps=config)
    gateway = await stack.serving("gateway", apps=config)

    seen: list[tuple[str, str, dict[str, Any]]] = []  # (app token, channel, event), in server order

    async def record(msg: Msg) -> None:
        _, _, token, _, channel = msg.subject.split(".")
        if channel in ("proc", "sess"):
            seen.append((token, channel, json.loads(msg.data)))

    await nc.subscribe(subjects.mcp_all, cb=record)
    await write_through.flush(nc)
    os.kill(supervisor.pid, signal.SIGTERM)  # the supervisor first: it must wait for the gateway
    os.kill(gateway.pid, signal.SIGTERM)
    assert await exited(gateway) == 0
    assert await exited(supervisor) == 0

    for app in apps:
        events = [(channel, event["state"]) for token, channel, event in seen if token == app_token(app)]
        assert ("sess", "closed") in events, (app, events)
        closed = events.index(("sess", "closed"))
        ended = [i for i, (channel, state) in enumerate(events)
                 if channel == "proc" and state in ("stopped", "exited")]
        assert ended, (app, events)
        assert closed < ended[0], f"{app}: its process ended before its session was closed: {events}"
    # Whether the supervisor had to wait (and logged "session closed, stopping app") depends on
    # which SIGTERM handler ran first; the order on NATS above is what must hold either way.
    assert "session still open after the bounded wait" not in supervisor.logs()
