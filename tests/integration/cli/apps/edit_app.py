"""Test MCP app for `aurora tools edit` (`governance: review`: its tools start as DRAFT). `lookup`
and `blank` never change; `probe` gains a parameter once the file named by EDIT_APP_MARKER exists,
so a restart shows the app changing a schema (and that the sync of the whole list was done)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

READ = types.ToolAnnotations(read_only_hint=True)


def tools() -> list[types.Tool]:
    probe: dict[str, Any] = {"sensor": {"type": "string"}}
    if Path(os.environ["EDIT_APP_MARKER"]).exists():
        probe["depth"] = {"type": "number"}
    return [
        types.Tool(name="lookup", description="Look up a record by its id.", annotations=READ,
                   input_schema={"type": "object", "required": ["id"],
                                 "properties": {"id": {"type": "string"}, "timeout": {"type": "integer"}}}),
        types.Tool(name="blank", description="", annotations=READ,
                   input_schema={"type": "object", "properties": {"n": {"type": "integer"}}}),
        types.Tool(name="probe", description="Probe a sensor.", annotations=READ,
                   input_schema={"type": "object", "properties": probe}),
    ]


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=tools())


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name not in {t.name for t in tools()}:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    data = {"tool": params.name, "arguments": params.arguments or {}}
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(data))],
                                structured_content=data)


server = Server("aurora-test-edit", version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
