"""One of Aurora's apps as its own stdio process, spoken to by the official MCP client, with
every `aurora/event` notification it sends collected (the SDK drops unknown notifications, so
they are read at the transport, as the gateway does)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from services.mcp_gateway.transports.tap import tapped
from tests.harness.processes import REPO


class AppClient:
    """An app's session and the events it sent, with the calls a test makes most."""

    def __init__(self, session: ClientSession, events: MemoryObjectReceiveStream[dict[str, Any]]) -> None:
        self.session = session
        self.events = events

    async def call(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.session.call_tool(tool, arguments)
        assert not result.is_error, result.content
        assert result.structured_content is not None
        return dict(result.structured_content)

    async def error(self, tool: str, **arguments: Any) -> str:
        result = await self.session.call_tool(tool, arguments)
        assert result.is_error, result
        return " ".join(getattr(block, "text", "") for block in result.content)

    async def next_event(self, timeout: float = 5.0) -> dict[str, Any]:
        with anyio.fail_after(timeout):
            return await self.events.receive()


@asynccontextmanager
async def stdio_app(module: str, env: dict[str, str]) -> AsyncIterator[
        tuple[ClientSession, MemoryObjectReceiveStream[dict[str, Any]]]]:
    """`python -m <module>` with `env`; yields the initialized session and its events."""
    params = StdioServerParameters(command=sys.executable, args=["-m", module], env=env, cwd=str(REPO))
    send, receive = anyio.create_memory_object_stream[dict[str, Any]](100)

    async def observe(method: str, params: dict[str, Any] | None, receipt: str | None) -> None:
        if method == "aurora/event":
            await send.send(params or {})

    async with (send, receive, tapped(stdio_client(params), observe) as (read, write),
                ClientSession(read, write) as session):
        await session.initialize()
        yield session, receive
