"""An in-memory MCP peer for the session's unit tests: it answers `initialize`, `tools/list` and
`tools/call` of `echo`, never answers `hang`, and can push any notification."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client._transport import TransportStreams
from mcp.shared.message import SessionMessage

TOOLS: list[dict[str, Any]] = [
    {"name": "echo", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "hang", "inputSchema": {"type": "object"}},
]


class FakeServer:
    def __init__(self, *, answers_initialize: bool = True) -> None:
        self.answers_initialize = answers_initialize
        self.tools = list(TOOLS)
        self.connections = 0
        self.requests: list[str] = []
        self._to_client: MemoryObjectSendStream[SessionMessage | Exception] | None = None

    @asynccontextmanager
    async def transport(self) -> AsyncIterator[TransportStreams]:
        self.connections += 1
        to_server, from_client = anyio.create_memory_object_stream[SessionMessage](100)
        to_client, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](100)
        self._to_client = to_client
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._serve, from_client, to_client)
                try:
                    yield from_server, to_server
                finally:
                    tg.cancel_scope.cancel()
        finally:
            for stream in (to_server, from_client, to_client, from_server):
                await stream.aclose()

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        assert self._to_client is not None
        await self._to_client.send(SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method=method,
                                                                            params=params)))

    async def _serve(self, requests: MemoryObjectReceiveStream[SessionMessage],
                     replies: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
        async for item in requests:
            message = item.message
            if not isinstance(message, types.JSONRPCRequest):
                continue
            self.requests.append(message.method)
            params = message.params or {}
            result: dict[str, Any] | None = None
            if message.method == "initialize" and self.answers_initialize:
                result = {"protocolVersion": params["protocolVersion"],
                          "capabilities": {"tools": {"listChanged": True}},
                          "serverInfo": {"name": "fake", "version": "1.2.3"}}
            elif message.method == "tools/list":
                result = {"tools": self.tools}
            elif message.method == "tools/call" and params["name"] == "echo":
                args = params.get("arguments") or {}
                result = {"content": [{"type": "text", "text": "echo"}], "structuredContent": args}
            if result is not None:
                with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                    await replies.send(SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=message.id,
                                                                            result=result)))
