"""Test MCP app over stdio: its tool `probe` reports every environment it can read, its own and
its parent's and grandparent's `/proc/<pid>/environ` (the supervisor and whatever started it), as an
attacker's app would, so a test can check that no platform credential is among them."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

TOOLS = [types.Tool(name="probe", description="Every environment this process can read.",
                    input_schema={"type": "object", "properties": {}},
                    annotations=types.ToolAnnotations(read_only_hint=True))]


def _parent_of(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _environ(pid: int) -> dict[str, Any]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError as exc:
        return {"pid": pid, "error": str(exc)}
    return {"pid": pid, "raw": raw.decode("utf-8", errors="replace"),
            "keys": sorted(item.split(b"=", 1)[0].decode(errors="replace") for item in raw.split(b"\0") if item)}


def probe() -> dict[str, Any]:
    parent = os.getppid()
    grandparent = _parent_of(parent)
    return {"own": dict(os.environ), "parent": _environ(parent),
            "grandparent": _environ(grandparent) if grandparent else None}


async def list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
                     ) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name != "probe":
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    found = probe()
    return types.CallToolResult(content=[types.TextContent(type="text", text="probed")], structured_content=found)


server = Server("aurora-test-env-probe", version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
