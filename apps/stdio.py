"""Serving an app's MCP session on its stdin and stdout through the event loop's own pipes.

Why: the SDK's `stdio_server` reads and writes the standard streams through anyio's file
wrappers, which hand every `readline`, `write` and `flush` to a worker thread: a tool call made
six thread hand-offs in the app, each a queue, a thread's wake-up and a wake-up of the loop. On
the platform's path (a chat's reply is such a call) that was most of the app's CPU per call, on
the two cores the whole stack shares (docs/benchmarks.md, "The apps' stdio without threads").
Here the loop reads stdin and writes stdout as pipes, and the SDK's `stdio_server` is given them
as its explicit streams, so everything else (the JSON-RPC framing, the session) stays the SDK's.

What the SDK's own claim of the descriptors does is kept: while the app serves, fd 0 reads the
null device and fd 1 writes to stderr, so a handler's stray `print` or a child process cannot
corrupt the wire; the session's streams are private duplicates. Where stdin or stdout is not a
pipe or socket (a file, a terminal, Windows), the SDK's threaded transport serves as before.
"""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

# A JSON-RPC message is one line; the SDK's reader has no limit, a StreamReader needs one.
LINE_LIMIT = 64 * 1024 * 1024


class _Lines:
    """stdin's lines as text, as `stdio_server` iterates its `stdin`."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _Out:
    """stdout as `stdio_server` writes its `stdout`: `write` hands the line to the pipe, `flush`
    waits only while the pipe is full (the reader is behind)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


def _is_pipe(fd: int) -> bool:
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@asynccontextmanager
async def _claimed_pipes() -> AsyncIterator[tuple[_Lines, _Out]]:
    """stdin and stdout as the loop's pipes on private descriptors; fd 0 and 1 diverted meanwhile."""
    loop = asyncio.get_running_loop()
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    read_transport: asyncio.BaseTransport | None = None
    write_transport: asyncio.BaseTransport | None = None
    try:
        reader = asyncio.StreamReader(limit=LINE_LIMIT)
        read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                                         os.fdopen(wire_in, "rb", buffering=0))
        write_transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                                  os.fdopen(wire_out, "wb", buffering=0))
        writer = asyncio.StreamWriter(write_transport, protocol, None, loop)  # type: ignore[arg-type]
        yield _Lines(reader), _Out(writer)
    finally:
        for transport in (read_transport, write_transport):
            if transport is not None:
                transport.close()
        sys.stdout.flush()
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)


async def serve_stdio(server: MCPServer[Any]) -> None:
    """`server.run_stdio_async()`, on the loop's pipes where stdin and stdout are pipes."""
    if sys.platform == "win32" or not (_is_pipe(0) and _is_pipe(1)):
        await server.run_stdio_async()
        return
    # What `run_stdio_async` runs, given other streams: the SDK has no public handle on it.
    lowlevel = server._lowlevel_server
    async with _claimed_pipes() as (lines, out), \
            stdio_server(lines, out) as (read_stream, write_stream):  # type: ignore[arg-type]
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
