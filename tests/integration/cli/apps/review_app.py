"""Test MCP app for `governance: review`: its tools start as DRAFT. `lookup` is fit to publish;
`broken` is not (no description, an input schema that is not valid JSON Schema)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

TOOLS = [
    types.Tool(
        name="lookup",
        description="Look up a record by its id.",
        input_schema={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
    types.Tool(
        name="broken",
        description="",
        input_schema={"type": "object", "properties": {"n": {"type": "nonsense"}}},
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
]


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name not in {t.name for t in TOOLS}:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    data = {"tool": params.name, "arguments": params.arguments or {}}
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(data))],
                                structured_content=data)


server = Server("aurora-test-review", version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
