"""One app's MCP session (`AppSession`) against real stdio apps, the SDK's stdio client as its
transport: the initialize deadline and its reason, listing and calling tools, a new process
generation initialized again (an old or the same one changes nothing), and every notification
observed (list_changed also refreshes the tools).

A call in flight failing at once when the supervisor reports its process gone is tested with
the real supervisor and gateway processes (`test_recovery.py`): there the exit is a real one."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
import pytest
from mcp.client.stdio import StdioServerParameters, stdio_client

from services.mcp_gateway.sessions.errors import SessionUnavailable
from services.mcp_gateway.sessions.session import AppSession
from shared.config.appconfig import AppConfig
from shared.contracts.health import SessionStatus
from tests.harness.waiting import poll
from tests.integration.mcp_gateway.helpers import ECHO_APP, PYTHON, REPO, SILENT_APP


@dataclass
class Recorder:
    states: list[tuple[SessionStatus, str | None]] = field(default_factory=list)
    listings: list[list[str]] = field(default_factory=list)
    notifications: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    problems: list[str | None] = field(default_factory=list)

    async def session_state(self, session: AppSession, status: SessionStatus, reason: str | None) -> None:
        self.states.append((status, reason))

    async def tools_listed(self, session: AppSession, tools: list[types.Tool]) -> None:
        self.listings.append([t.name for t in tools])

    async def notification(self, session: AppSession, method: str, params: dict[str, Any] | None,
                           receipt: str | None = None) -> None:
        self.notifications.append((method, params))

    async def initialize_refused(self, session: AppSession, reason: str) -> None:
        self.refused.append(reason)

    async def app_hung(self, session: AppSession, reason: str) -> None:
        self.refused.append(reason)

    async def session_problem(self, session: AppSession) -> None:
        self.problems.append(session.problem)


class StdioApp:
    """A real app process per connection (the SDK's stdio client), counting the connections."""

    def __init__(self, *args: str) -> None:
        self.params = StdioServerParameters(command=PYTHON, args=list(args), cwd=str(REPO))
        self.connections = 0

    @asynccontextmanager
    async def transport(self) -> AsyncIterator[Any]:
        self.connections += 1
        async with stdio_client(self.params) as streams:
            yield streams


ECHO = (str(ECHO_APP),)
SILENT = (str(SILENT_APP),)
WEATHER = ("-m", "apps.aurora_app_weather")


def app_config(health_timeout: float) -> AppConfig:
    return AppConfig.model_validate({"name": "app", "package": "test.app",
                                     "mcp": {"command": ["unused"], "health_timeout_seconds": health_timeout}})


@pytest.fixture
async def stop() -> AsyncIterator[asyncio.Event]:
    event = asyncio.Event()
    yield event
    event.set()


async def start(app: StdioApp, recorder: Recorder, stop: asyncio.Event,
                health_timeout: float = 15.0) -> tuple[AppSession, asyncio.Task[None]]:
    session = AppSession(app_config(health_timeout), app.transport, recorder, retry_initial=0.05, retry_max=0.1)
    task = asyncio.create_task(session.run(stop), name="test-session")
    await asyncio.wait_for(session.first_attempt_done.wait(), health_timeout + 10)
    return session, task


async def test_an_app_that_never_initializes_is_unavailable_with_the_reason(stop: asyncio.Event) -> None:
    recorder = Recorder()
    session, task = await start(StdioApp(*SILENT), recorder, stop, health_timeout=0.5)
    assert session.status == "unavailable"
    assert session.last_error == "initialize did not finish within 0.5s"
    assert recorder.states[0] == ("unavailable", "initialize did not finish within 0.5s")
    with pytest.raises(SessionUnavailable, match="initialize did not finish"):
        await session.call_tool("echo", {}, 1)
    stop.set()
    await asyncio.wait_for(task, 15)
    assert recorder.states[-1] == ("closed", "gateway stopped")


async def test_a_session_lists_tools_and_calls_them(stop: asyncio.Event) -> None:
    recorder = Recorder()
    session, _ = await start(StdioApp(*ECHO), recorder, stop)
    assert session.status == "connected" and session.server_info is not None
    assert session.server_info.name == "aurora-test-echo"
    [listed] = recorder.listings
    assert {"echo", "slow", "counter_increment"} <= set(listed)
    result = await session.call_tool("echo", {"n": 1.0, "big": 2**70}, 5)
    assert result.structured_content == {"n": 1.0, "big": 2**70}


async def test_a_new_process_generation_is_initialized_again(stop: asyncio.Event) -> None:
    app, recorder = StdioApp(*ECHO), Recorder()
    session, _ = await start(app, recorder, stop)

    session.process_started(2)

    async def reconnected() -> bool:
        return app.connections == 2 and session.connected

    await poll(reconnected, what="the session on a second connection")
    assert [s for s, _ in recorder.states] == ["connected", "disconnected", "connected"]
    assert len(recorder.listings) == 2  # initialized (and listed) again
    assert (await session.call_tool("echo", {"again": True}, 5)).structured_content == {"again": True}

    for stale in (2, 1):  # the same generation again, or an older one: nothing to do
        session.process_started(stale)
    # a call answered on the same connection after both: neither dropped it
    assert (await session.call_tool("echo", {"still": True}, 5)).structured_content == {"still": True}
    assert app.connections == 2 and session.connected
    assert [s for s, _ in recorder.states] == ["connected", "disconnected", "connected"]


async def test_every_notification_is_observed_and_list_changed_refreshes_the_tools(stop: asyncio.Event) -> None:
    recorder = Recorder()
    session, _ = await start(StdioApp(*WEATHER), recorder, stop)

    for method, params in (("notifications/acme/ping", {"n": 1}),
                           ("notifications/tools/list_changed", {})):
        await session.call_tool("emit_notification", {"method": method, "params": params}, 5)

    async def listed_again() -> bool:
        return len(recorder.listings) == 2

    await poll(listed_again, what="the tools listed again after list_changed")
    assert recorder.listings[1] == recorder.listings[0] and "emit_notification" in recorder.listings[0]
    assert [m for m, _ in recorder.notifications] == ["notifications/acme/ping", "notifications/tools/list_changed"]
    assert recorder.notifications[0][1] == {"n": 1}
