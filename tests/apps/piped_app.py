"""Test MCP app served by `apps.stdio.serve_stdio` (the loop's pipes): a tool that prints to
stdout as a careless handler would, one that says how many threads the process runs, and one
that echoes its text (a line longer than a StreamReader's default limit)."""

from __future__ import annotations

import threading

import anyio
from mcp.server.mcpserver import MCPServer

from apps.stdio import serve_stdio

server = MCPServer("aurora-test-piped")


@server.tool()
async def shout(text: str) -> str:
    """Print `text` to stdout (it must not reach the wire) and answer it."""
    print(f"stray output: {text}", flush=True)
    return text


@server.tool()
async def threads() -> int:
    """How many threads this process runs now."""
    return threading.active_count()


@server.tool()
async def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    anyio.run(serve_stdio, server)
