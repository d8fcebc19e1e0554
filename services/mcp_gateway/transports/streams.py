"""The pair of message streams an MCP client session reads from and writes to.

The SDK types its transports with stream protocols from a private module
(`mcp.shared._stream_protocols`); these are the same shapes under names we own, so the
gateway depends only on what the SDK promises: any object with these methods works, the
SDK's own streams and anyio's memory streams included.
"""

from __future__ import annotations

from types import TracebackType
from typing import Protocol, Self

from mcp.shared.message import SessionMessage


class MessageReader(Protocol):
    """Messages from the server, or the exception a transport hit while reading."""

    async def receive(self) -> SessionMessage | Exception: ...
    async def aclose(self) -> None: ...
    def __aiter__(self) -> MessageReader: ...
    async def __anext__(self) -> SessionMessage | Exception: ...
    async def __aenter__(self) -> Self: ...
    async def __aexit__(self, exc_type: type[BaseException] | None, exc_val: BaseException | None,
                        exc_tb: TracebackType | None) -> bool | None: ...


class MessageWriter(Protocol):
    """Messages to the server."""

    async def send(self, item: SessionMessage, /) -> None: ...
    async def aclose(self) -> None: ...
    async def __aenter__(self) -> Self: ...
    async def __aexit__(self, exc_type: type[BaseException] | None, exc_val: BaseException | None,
                        exc_tb: TracebackType | None) -> bool | None: ...


TransportStreams = tuple[MessageReader, MessageWriter]
