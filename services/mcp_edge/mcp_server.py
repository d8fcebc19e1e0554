"""The MCP server behind every `/agents/<id>/mcp`: tools/list and tools/call for the caller.

One SDK `Server` serves all agents: which agent and which token a request is for is decided by
the HTTP layer (`http_app`) before the SDK sees it, and handed in through the request's ASGI
state (`ctx.request.state`), the one per-request object the SDK passes to handlers in both
protocol eras.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError

from services.mcp_edge.asks import ClientAsks
from services.mcp_edge.changes import ListChanges
from services.mcp_edge.gate import Caller, EdgeTool, Gate
from services.mcp_edge.hold import call_held, new_task_id
from services.mcp_edge.listen import serve_listen
from shared.contracts.envelope import Trace
from shared.contracts.toolcall import ToolCallResult

CALLER_STATE = "aurora_caller"  # key in the ASGI scope's state
VERSION = "0.1.0"
# W3C Trace Context, version 00: a trace id and a parent id, neither all zeros (checked below).
_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$")


class EdgeServer(Server[Any]):
    """Says in `initialize` that the tool list changes (the edge pushes `list_changed` on the
    session's GET stream): the stateless runner asks the server for its options, with no way
    to pass them in."""

    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        return super().create_initialization_options(notification_options or NotificationOptions(tools_changed=True),
                                                     experimental_capabilities, extensions)


def caller_of(ctx: ServerRequestContext[Any]) -> Caller:
    request = ctx.request
    state = getattr(request, "scope", {}).get("state", {}) if request is not None else {}
    caller = state.get(CALLER_STATE)
    if not isinstance(caller, Caller):  # the HTTP layer always sets it: without it, refuse
        raise MCPError(code=types.INVALID_REQUEST, message="no authenticated caller for this request")
    return caller


def trace_of(meta: Mapping[str, Any] | None) -> Trace | None:
    """The trace a request's `_meta` carries (`traceparent`, `tracestate`, as MCP names them after
    W3C Trace Context), for the gateway's call to continue: the client's trace and Aurora's are
    one. A malformed value is ignored, as W3C says a receiver does."""
    value = (meta or {}).get("traceparent")
    found = _TRACEPARENT.fullmatch(value) if isinstance(value, str) else None
    if found is None or set(found.group(1)) == {"0"} or set(found.group(2)) == {"0"}:
        return None
    state = (meta or {}).get("tracestate")
    return Trace(traceparent=value, tracestate=state if isinstance(state, str) and state else None)


def mcp_tool(tool: EdgeTool) -> types.Tool:
    return types.Tool(name=tool.name, description=tool.description, input_schema=tool.input_schema,
                      annotations=types.ToolAnnotations(read_only_hint=tool.side_effect == "read",
                                                        destructive_hint=tool.side_effect == "dangerous"))


def mcp_result(result: ToolCallResult) -> types.CallToolResult:
    """A gateway result as MCP says it: only `ok` is a success; every other status is a tool
    error whose first text names the status, the code and the reason."""
    content: list[types.ContentBlock] = []
    for block in result.content:
        try:
            content.append(types.TextContent.model_validate(block) if block.get("type") == "text"
                           else types.ImageContent.model_validate(block) if block.get("type") == "image"
                           else types.TextContent(type="text", text=str(block)))
        except ValueError:
            content.append(types.TextContent(type="text", text=str(block)))
    if result.status == "ok":
        return types.CallToolResult(content=content, structured_content=result.structured, is_error=False)
    reason = f"{result.status}: {result.error.code}: {result.error.message}" if result.error else result.status
    return types.CallToolResult(content=[types.TextContent(type="text", text=reason), *content], is_error=True,
                                structured_content={"status": result.status, "approval_id": result.approval_id,
                                                    "error": result.error.code if result.error else None})


def build_server(gate: Gate, asks: ClientAsks, changes: ListChanges, *, approval_wait_seconds: float,
                 approval_poll_seconds: float = 0.5) -> Server[Any]:
    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        caller = caller_of(ctx)
        tools = await gate.tools(caller.agent)
        # By name: the same set is listed in the same order (MCP 2026-07-28 asks a deterministic
        # order, for clients' caches and models' prompt caches), whatever order the agent declared.
        return types.ListToolsResult(tools=[mcp_tool(t) for t in sorted(tools or [], key=lambda t: t.name)])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        caller = dataclasses.replace(caller_of(ctx), trace=trace_of(params.meta))

        async def progress(done: float, message: str) -> None:
            await ctx.session.report_progress(done, None, message)

        task_id = new_task_id()
        async with asks.listening(task_id, caller, ctx):  # the app may ask this client during the call
            result = await call_held(gate, caller, params.name, dict(params.arguments or {}), progress,
                                     wait_seconds=approval_wait_seconds, poll_seconds=approval_poll_seconds,
                                     task_id=task_id)
        return mcp_result(result)

    async def listen(ctx: ServerRequestContext[Any],
                     params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        return await serve_listen(changes, caller_of(ctx), ctx, params)

    return EdgeServer("aurora-mcp-edge", version=VERSION, instructions="An Aurora agent's tools, through the gateway.",
                      on_list_tools=list_tools, on_call_tool=call_tool, on_subscriptions_listen=listen)
