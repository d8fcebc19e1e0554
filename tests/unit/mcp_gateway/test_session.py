"""One app's MCP session against an in-memory peer: the initialize deadline and its reason, a
call failing at once when the process goes away, re-initializing for a new process, and every
notification observed (list_changed also refreshes the tools)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
import pytest

from services.mcp_gateway.session import AppSession, SessionUnavailable
from shared.appconfig import AppConfig
from shared.contracts.health import SessionStatus
from tests.unit.mcp_gateway.fake_server import FakeServer


@dataclass
class Recorder:
    states: list[tuple[SessionStatus, str | None]] = field(default_factory=list)
    listings: list[list[str]] = field(default_factory=list)
    notifications: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    async def session_state(self, session: AppSession, status: SessionStatus, reason: str | None) -> None:
        self.states.append((status, reason))

    async def tools_listed(self, session: AppSession, tools: list[types.Tool]) -> None:
        self.listings.append([t.name for t in tools])

    async def notification(self, session: AppSession, method: str, params: dict[str, Any] | None) -> None:
        self.notifications.append((method, params))

    async def initialize_refused(self, session: AppSession, reason: str) -> None:
        self.refused.append(reason)

    async def app_hung(self, session: AppSession, reason: str) -> None:
        self.refused.append(reason)


def app_config(health_timeout: float = 2.0) -> AppConfig:
    return AppConfig.model_validate({"name": "fake", "package": "test.fake",
                                     "mcp": {"command": ["fake"], "health_timeout_seconds": health_timeout}})


async def until(check: Any, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


@pytest.fixture
async def stop() -> AsyncIterator[asyncio.Event]:
    event = asyncio.Event()
    yield event
    event.set()


async def start(server: FakeServer, recorder: Recorder, stop: asyncio.Event,
                health_timeout: float = 2.0) -> tuple[AppSession, asyncio.Task[None]]:
    session = AppSession(app_config(health_timeout), server.transport, recorder, retry_initial=0.05, retry_max=0.1)
    task = asyncio.create_task(session.run(stop))
    await asyncio.wait_for(session.first_attempt_done.wait(), health_timeout + 2)
    return session, task


async def test_an_app_that_never_initializes_is_unavailable_with_the_reason(stop: asyncio.Event) -> None:
    recorder = Recorder()
    session, task = await start(FakeServer(answers_initialize=False), recorder, stop, health_timeout=0.2)
    assert session.status == "unavailable"
    assert session.last_error == "initialize did not finish within 0.2s"
    assert recorder.states[0] == ("unavailable", "initialize did not finish within 0.2s")
    with pytest.raises(SessionUnavailable, match="initialize did not finish"):
        await session.call_tool("echo", {}, 1)
    stop.set()
    await asyncio.wait_for(task, 3)
    assert recorder.states[-1] == ("closed", "gateway stopped")


async def test_a_session_lists_tools_and_calls_them(stop: asyncio.Event) -> None:
    recorder = Recorder()
    session, _ = await start(FakeServer(), recorder, stop)
    assert session.status == "connected" and session.server_info is not None
    assert session.server_info.version == "1.2.3"
    assert recorder.listings == [["echo", "hang"]]
    result = await session.call_tool("echo", {"n": 1.0, "big": 2**70}, 2)
    assert result.structured_content == {"n": 1.0, "big": 2**70}


async def test_a_call_in_flight_fails_at_once_when_the_process_exits(stop: asyncio.Event) -> None:
    recorder = Recorder()
    session, _ = await start(FakeServer(), recorder, stop)
    call = asyncio.create_task(session.call_tool("hang", {}, 30))
    await asyncio.sleep(0.05)
    began = time.monotonic()
    session.process_exited("the app process exited with code -9")
    with pytest.raises(SessionUnavailable, match="went away during the call: the app process exited with code -9"):
        await asyncio.wait_for(call, 2)
    assert time.monotonic() - began < 0.5
    await until(lambda: ("disconnected", "the app process exited with code -9") in recorder.states)


async def test_a_new_process_generation_is_initialized_again(stop: asyncio.Event) -> None:
    server, recorder = FakeServer(), Recorder()
    session, _ = await start(server, recorder, stop)

    session.process_started(2)
    await until(lambda: server.connections == 2 and session.connected)
    assert server.requests.count("initialize") == 2
    assert [s for s, _ in recorder.states] == ["connected", "disconnected", "connected"]
    assert (await session.call_tool("echo", {"again": True}, 2)).structured_content == {"again": True}

    for stale in (2, 1):  # the same generation again, or an older one: nothing to do
        session.process_started(stale)
    await asyncio.sleep(0.1)
    assert server.connections == 2 and session.connected


async def test_every_notification_is_observed_and_list_changed_refreshes_the_tools(stop: asyncio.Event) -> None:
    server, recorder = FakeServer(), Recorder()
    await start(server, recorder, stop)

    await server.notify("notifications/acme/ping", {"n": 1})  # unknown to the SDK
    await server.notify("aurora/event", {"payload": {"type": "x.y"}})
    server.tools = [*server.tools, {"name": "added", "inputSchema": {"type": "object"}}]
    await server.notify("notifications/tools/list_changed")

    await until(lambda: len(recorder.listings) == 2)
    assert recorder.listings[-1] == ["echo", "hang", "added"]
    assert [m for m, _ in recorder.notifications] == [
        "notifications/acme/ping", "aurora/event", "notifications/tools/list_changed"]
    assert recorder.notifications[0][1] == {"n": 1}
