"""Healing without help: an app killed mid-call fails that call at once and comes back; a
gateway killed and started again re-establishes its sessions."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from shared.contracts.subjects import Subjects
from shared.nats import write_through
from tests.harness.processes import REPO, ServiceProcess, logged
from tests.harness.stack import Stack
from tests.harness.tcpproxy import TcpProxy
from tests.integration.mcp_gateway.helpers import (
    call,
    call_approved,
    call_envelope,
    call_until_ok,
    echo_app,
    poll,
    stdio,
    supervised_pid,
    write_apps,
)


async def echo_stack_seen_from_c2s(
    nc: NATS, subjects: Subjects, stack: Stack, folder: Path, *, gateway_url: str | None = None
) -> list[dict[str, Any]]:
    """Supervisor and gateway serving the echo app (the gateway connected to `gateway_url`, when
    given); every message the gateway writes to the app (its c2s relay) lands in the returned list."""
    config = write_apps(folder, {"echo": echo_app()})
    stack.launch("supervisor", apps=config)
    await stack.serving("gateway", apps=config, **({"NATS_URL": gateway_url} if gateway_url else {}))
    written: list[dict[str, Any]] = []

    async def on_c2s(msg: Msg) -> None:
        written.append(json.loads(msg.data))

    await nc.subscribe(subjects.mcp("test.echo", "default", "c2s"), cb=on_c2s)
    await write_through.flush(nc)
    return written


async def test_an_app_killed_mid_call_fails_the_call_at_once_and_is_healed(
    nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path
) -> None:
    requests = await echo_stack_seen_from_c2s(nc, subjects, stack, tmp_path)
    first_pid = await supervised_pid(nc, subjects, "echo")
    in_flight = asyncio.ensure_future(call(nc, subjects, "test.echo.slow", {"seconds": 10}, timeout=15))

    async def slow_was_sent() -> bool:
        return any(r.get("method") == "tools/call" and r["params"]["name"] == "slow"  # type: ignore[index]
                   for r in requests)

    await poll(slow_was_sent, what="the slow call to reach the app")
    killed_at = time.monotonic()
    os.kill(first_pid, signal.SIGKILL)
    result = await asyncio.wait_for(in_flight, 5)
    answered_after = time.monotonic() - killed_at

    assert result["status"] == "unavailable", result
    assert result["error"]["code"] == "app_unavailable" and "echo" in result["error"]["message"], result
    assert answered_after < 1.0, f"the call took {answered_after:.2f}s to fail after the kill"

    healed = await call_until_ok(nc, subjects, "test.echo.echo", {"after": "restart"})
    assert healed["structured"] == {"after": "restart"}
    assert await supervised_pid(nc, subjects, "echo") != first_pid


async def test_a_restarted_gateway_re_establishes_its_sessions(
    nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path
) -> None:
    config = write_apps(tmp_path, {"echo": echo_app(), "other": echo_app("test.other")})
    stack.launch("supervisor", apps=config)
    first = await stack.serving("gateway", "gateway-1", apps=config)
    assert (await call(nc, subjects, "test.echo.echo", {"n": 1}))["status"] == "ok"
    pids = {app: await supervised_pid(nc, subjects, app) for app in ("echo", "other")}

    first.kill()
    await stack.serving("gateway", "gateway-2", apps=config)

    for tool in ("test.echo.echo", "test.other.echo"):
        result = await call_until_ok(nc, subjects, tool, {"n": 3}, timeout=10)
        assert result["structured"] == {"n": 3}
    # The same processes serve the new gateway: its sessions were re-established, not the apps
    # restarted.
    assert {app: await supervised_pid(nc, subjects, app) for app in pids} == pids


async def test_a_call_past_its_timeout_is_cancelled_at_the_app_and_the_session_serves_on(
    nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path
) -> None:
    written = await echo_stack_seen_from_c2s(nc, subjects, stack, tmp_path)
    started = time.monotonic()
    result = await call(nc, subjects, "test.echo.slow", {"seconds": 5}, timeout=0.5)
    assert result["status"] == "timeout" and result["error"]["code"] == "timeout", result
    assert time.monotonic() - started < 3

    [request] = [m for m in written if m.get("method") == "tools/call"]

    async def cancelled() -> list[dict[str, Any]]:
        return [m for m in written if m.get("method") == "notifications/cancelled"]

    [notice] = await poll(cancelled, what="notifications/cancelled on c2s")
    assert notice["params"]["requestId"] == request["id"]
    assert (await call(nc, subjects, "test.echo.echo", {"after": "timeout"}))["structured"] == {"after": "timeout"}


async def test_a_hung_app_is_found_by_its_ping_and_given_a_fresh_process(
    nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path
) -> None:
    """Its process runs but answers nothing (SIGSTOP): the gateway's ping finds it, the session is
    dropped and the supervisor gives the app a fresh process; calls work again without help."""
    app = echo_app(mcp={"ping_interval_seconds": 0.5, "health_timeout_seconds": 2})
    config = write_apps(tmp_path, {"echo": app})
    # a stopped process ignores SIGTERM: SIGKILL soon
    stack.launch("supervisor", apps=config, AURORA_STOP_GRACE_SECONDS="1")
    await stack.serving("gateway", apps=config)
    # Under load the app may take longer than its 2 s to start: the session is tried again.
    await call_until_ok(nc, subjects, "test.echo.echo", {"n": 1}, timeout=40)
    hung_pid = await supervised_pid(nc, subjects, "echo")
    os.kill(hung_pid, signal.SIGSTOP)
    try:
        healed = await call_until_ok(nc, subjects, "test.echo.echo", {"after": "hang"}, timeout=40)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(hung_pid, signal.SIGCONT)
    assert healed["structured"] == {"after": "hang"}
    assert await supervised_pid(nc, subjects, "echo") != hung_pid


async def test_a_write_whose_app_dies_during_the_call_has_an_unknown_outcome(
    nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path
) -> None:
    """The call reached the app, which went away before answering: a read would simply have
    failed, but a write or dangerous call may have taken effect, so it is `outcome_unknown`
    (never `unavailable`, which promises that nothing ran)."""
    config = write_apps(tmp_path, {"echo": echo_app()})
    stack.launch("supervisor", apps=config)
    await stack.serving("gateway", apps=config)
    assert (await call(nc, subjects, "test.echo.echo", {"n": 1}))["status"] == "ok"
    crashed = await call_approved(nc, subjects, "test.echo.crash", {})  # dangerous: a person grants it first
    assert crashed["status"] == "outcome_unknown", crashed
    assert crashed["side_effect"] == "dangerous" and crashed["error"]["code"] == "app_went_away"
    assert "may or may not have taken effect" in crashed["error"]["message"]
    healed = await call_until_ok(nc, subjects, "test.echo.echo", {"after": "crash"})
    assert healed["structured"] == {"after": "crash"}


async def test_a_write_that_reaches_no_supervisor_is_unavailable_at_once_and_runs_when_asked_again(
    nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path
) -> None:
    """The supervisor is gone (its connection, or all of it) while the gateway's session still
    stands: nats-server delivers the `tools/call` to nobody and says so, so the write fails at
    once as `unavailable` (nothing ran), not after its timeout as `outcome_unknown`; the ledger
    keeps no claim, and the same call asked again once a supervisor is back runs, once."""
    counter = tmp_path / "counter.jsonl"
    config = write_apps(tmp_path, {"echo": echo_app(mcp={"env": {"ECHO_COUNTER_FILE": str(counter)}})})
    supervisor = stack.launch("supervisor", apps=config)
    gateway = await stack.serving("gateway", apps=config)
    assert (await call(nc, subjects, "test.echo.counter_increment", {"key": "before"}))["status"] == "ok"

    supervisor.kill()  # its process group: the supervisor and the app, as a crashed container
    envelope = json.loads(call_envelope("test.echo.counter_increment", {"key": "k"}, timeout=10))
    envelope["header"]["message_id"] = "call-unheard-1"

    async def ask() -> dict[str, Any]:
        reply = await nc.request(subjects.operator_tool_call, json.dumps(envelope).encode(), timeout=20)
        payload: dict[str, Any] = json.loads(reply.data)["payload"]
        return payload

    started = time.monotonic()
    unheard = await ask()
    assert unheard["status"] == "unavailable", unheard
    assert unheard["error"]["code"] == "app_unavailable" and "was not reached" in unheard["error"]["message"], unheard
    assert time.monotonic() - started < 5, "the call waited out its timeout"
    for _ in range(2):
        assert (await ask())["status"] == "unavailable"
    # Every call fails so while the supervisor is away: one warning for all of them, not one each.
    assert _said(gateway, "relay to the app-supervisor") == [("warning", "relay to the app-supervisor failed")]

    assert _sessions_connected(gateway, "echo") == 1
    stack.launch("supervisor", apps=config)
    # Asked before the gateway has seen the new supervisor's app start, a write can be sent on the
    # session to the process before it and cut off by the restart: rightly `outcome_unknown`, not
    # what is tested here. So first the gateway's session to the new app.
    async def reconnected() -> bool:
        return _sessions_connected(gateway, "echo") >= 2

    await poll(reconnected, timeout=30, what="the gateway's session to the new supervisor's app")

    async def answered() -> dict[str, Any] | None:  # once the new supervisor's app is heard again
        result = await ask()
        return None if result["status"] == "unavailable" else result

    again = await poll(answered, timeout=30, interval=0.3, what="the call asked again to be answered")
    assert again["status"] == "ok" and again["structured"] == {"key": "k", "count": 1}, again
    assert (await ask())["structured"] == {"key": "k", "count": 1}  # from the ledger: it ran once
    await logged(gateway, "relay to the app-supervisor works again")  # the new supervisor's session
    assert _said(gateway, "relay to the app-supervisor") == [
        ("warning", "relay to the app-supervisor failed"), ("info", "relay to the app-supervisor works again")]


def _sessions_connected(process: ServiceProcess, app: str) -> int:
    """How often `process` said its session to `app` connected."""
    lines = (json.loads(line) for line in process.logs().splitlines() if line.startswith("{"))
    return sum(1 for line in lines if line.get("msg") == "session state" and line.get("app") == app
               and line.get("status") == "connected")


def _said(process: ServiceProcess, about: str) -> list[tuple[str, str]]:
    """The (level, message) of each line `process` logged whose message begins with `about`."""
    lines = (json.loads(line) for line in process.logs().splitlines() if line.startswith("{"))
    return [(line["level"], line["msg"]) for line in lines if str(line.get("msg", "")).startswith(about)]


async def test_a_platform_tools_call_keeps_the_callers_shorter_timeout(
    nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path
) -> None:
    """`event_reply` through a chat app that acknowledges slowly (3 s), asked with 1 s: the call
    ends at the caller's timeout, as an app tool's does, not at the app's 30 s."""
    chat = stdio([sys.executable, "-m", "apps.aurora_app_chat"], package="test.chat",
                 mcp={"cwd": str(REPO), "env": {"CHAT_LOG_FILE": str(tmp_path / "sent.jsonl"), "CHAT_WEB_PORT": "off"}},
                 platform={"reply": "send_message"}, startup={"send_delay_seconds": 3})
    config = write_apps(tmp_path, {"chat": chat})
    stack.launch("supervisor", apps=config)
    await stack.serving("gateway", apps=config)
    delivery = {"reply_target": {"app": "test.chat", "session_id": "s-timeout"}, "source_app": "test.chat"}
    envelope = json.loads(call_envelope("event_reply", {"text": "hello"}, timeout=1, context={"delivery": delivery}))
    started = time.monotonic()
    reply = await nc.request(subjects.operator_tool_call, json.dumps(envelope).encode(), timeout=40)
    took = time.monotonic() - started
    result = json.loads(reply.data)["payload"]
    assert result["status"] == "outcome_unknown" and result["error"]["code"] == "timeout", result
    assert "within 1s" in result["error"]["message"] and took < 2.5, (took, result)


async def test_an_answer_the_app_gave_while_the_gateway_was_away_reaches_it_once_it_is_back(
    nc: NATS, subjects: Subjects, nats_proxy: TcpProxy, stack: Stack, tmp_path: Path
) -> None:
    """The gateway's connection drops (a network cut between it and NATS) while an app works on
    its call, and the app answers before the gateway is back: nats-server says nobody heard the
    answer, the supervisor keeps it and sends it again, and the call ends `ok` once the gateway
    has reconnected, instead of waiting out its timeout as `outcome_unknown`."""
    requests = await echo_stack_seen_from_c2s(nc, subjects, stack, tmp_path, gateway_url=nats_proxy.url)
    supervisor = stack["supervisor"]
    in_flight = asyncio.ensure_future(call(nc, subjects, "test.echo.slow", {"seconds": 2}, timeout=25))

    async def slow_was_sent() -> bool:
        return any(r.get("method") == "tools/call" and r["params"]["name"] == "slow"  # type: ignore[index]
                   for r in requests)

    await poll(slow_was_sent, what="the slow call to reach the app")
    nats_proxy.cut()
    await logged(supervisor, "reached no gateway", timeout=15)  # the answer was given, and nobody heard it
    nats_proxy.heal()
    result = await asyncio.wait_for(in_flight, 20)

    assert result["status"] == "ok", result
    assert result["structured"] == {"slept": 2}, result
