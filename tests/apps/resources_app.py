"""Test MCP app over stdio (lowlevel Server) that offers resources: a short text, a long text
and an `echo` tool. None of Aurora's example apps offers a resource, so resource reads through
the gateway are tested with this one."""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

SERVER_NAME = "aurora-test-resources"
GREETING_URI = "memo://greeting"
GREETING = "你好, resources: the greeting memo"
LONG_URI = "memo://long"
LONG = "".join(chr(ord("a") + i % 26) for i in range(5000))  # longer than any event keeps

TEXTS = {GREETING_URI: GREETING, LONG_URI: LONG}

RESOURCES = [
    types.Resource(name="greeting", uri=GREETING_URI, mime_type="text/plain", description="A short memo."),
    types.Resource(name="long", uri=LONG_URI, mime_type="text/plain", description="A 5,000-character memo."),
]

TOOLS = [
    types.Tool(
        name="echo",
        description="Return the exact arguments received.",
        input_schema={"type": "object", "additionalProperties": True},
        annotations=types.ToolAnnotations(read_only_hint=True),
    ),
]


async def list_tools(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name != "echo":
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    args = params.arguments or {}
    return types.CallToolResult(content=[types.TextContent(type="text", text=json.dumps(args))],
                                structured_content=args)


async def list_resources(
    ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=RESOURCES)


async def read_resource(
    ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    text = TEXTS.get(str(params.uri))
    if text is None:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource: {params.uri}")
    return types.ReadResourceResult(
        contents=[types.TextResourceContents(uri=str(params.uri), mime_type="text/plain", text=text)]
    )


server = Server(SERVER_NAME, version="0.1.0", on_list_tools=list_tools, on_call_tool=call_tool,
                on_list_resources=list_resources, on_read_resource=read_resource)


async def main() -> None:
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
