"""The MCP server behind every `/agents/<id>/mcp`: tools/list and tools/call for the caller, and
the tasks extension's methods (a write waiting for approval is a task for a client that declared
it: `edge_tasks`).

One SDK `Server` serves all agents: which agent and which token a request is for is decided by
the HTTP layer (`http_app`) before the SDK sees it, and handed in through the request's ASGI
state (`ctx.request.state`), the one per-request object the SDK passes to handlers in both
protocol eras.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Awaitable, Mapping
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.shared.exceptions import MCPError
from pydantic import Field

from services.mcp_edge.asks import ClientAsks
from services.mcp_edge.changes import ListChanges
from services.mcp_edge.edge_tasks import TASKS_EXTENSION, EdgeTasks, UnknownTask, declares_tasks
from services.mcp_edge.gate import Caller, EdgeTool, Gate
from services.mcp_edge.hold import call_held, new_task_id
from services.mcp_edge.listen import serve_listen
from shared.contracts.envelope import Trace
from shared.contracts.toolcall import ToolCallResult
from shared.observability import tracing

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
                 approval_poll_seconds: float = 0.5, tasks: EdgeTasks | None = None) -> Server[Any]:
    async def list_tools(ctx: ServerRequestContext[Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        caller = caller_of(ctx)
        tools = await gate.tools(caller.agent)
        # By name: the same set is listed in the same order (MCP 2026-07-28 asks a deterministic
        # order, for clients' caches and models' prompt caches), whatever order the agent declared.
        return types.ListToolsResult(tools=[mcp_tool(t) for t in sorted(tools or [], key=lambda t: t.name)])

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> dict[str, Any]:
        # With tracing on, the SDK's span for this request (a child of the client's trace) is the
        # parent of the gateway's; with it off, the client's own context goes on as it came.
        caller = dataclasses.replace(caller_of(ctx), trace=tracing.current_trace() or trace_of(params.meta))
        arguments = dict(params.arguments or {})

        async def progress(done: float, message: str) -> None:
            await ctx.session.report_progress(done, None, message)

        task_id = new_task_id()
        async with asks.listening(task_id, caller, ctx):  # the app may ask this client during the call
            if tasks is not None and declares_tasks(params.meta):  # a wait for approval becomes a task
                result = await gate.call(caller, params.name, arguments, task_id=task_id)
                if result.status == "needs_approval" and result.approval_id is not None:
                    return await tasks.create(caller, params.name, arguments, task_id=task_id,
                                              approval_id=result.approval_id)
            else:
                result = await call_held(gate, caller, params.name, arguments, progress,
                                         wait_seconds=approval_wait_seconds, poll_seconds=approval_poll_seconds,
                                         task_id=task_id)
        return rendered(result)

    async def listen(ctx: ServerRequestContext[Any],
                     params: types.SubscriptionsListenRequestParams) -> types.SubscriptionsListenResult:
        return await serve_listen(changes, caller_of(ctx), ctx, params)

    server = EdgeServer("aurora-mcp-edge", version=VERSION,
                        instructions="An Aurora agent's tools, through the gateway.",
                        on_list_tools=list_tools, on_subscriptions_listen=listen)
    # Registered by method, not as `on_call_tool`: a call may answer a task, a result shape of the extension's.
    server.add_request_handler("tools/call", types.CallToolRequestParams, call_tool)
    if tasks is not None:
        serve_tasks(server, tasks)
    return server


def rendered(result: ToolCallResult) -> dict[str, Any]:
    """`mcp_result` as the JSON object it is on the wire."""
    return mcp_result(result).model_dump(mode="json", by_alias=True, exclude_none=True)


class TaskParams(types.RequestParams):
    task_id: str


class TaskUpdateParams(TaskParams):
    input_responses: dict[str, Any] = Field(default_factory=dict)


def serve_tasks(server: Server[Any], tasks: EdgeTasks) -> None:
    """`tasks/get`, `tasks/update` and `tasks/cancel` of the tasks extension, for the caller's own
    tasks, and the extension advertised in `server/discover`."""

    async def run(work: Awaitable[dict[str, Any] | None]) -> dict[str, Any]:
        try:
            return await work or {}
        except UnknownTask as exc:
            raise MCPError(code=types.INVALID_PARAMS, message=str(exc)) from None

    async def get(ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
        return await run(tasks.get(caller_of(ctx), params.task_id))

    async def update(ctx: ServerRequestContext[Any], params: TaskUpdateParams) -> dict[str, Any]:
        return await run(tasks.update(caller_of(ctx), params.task_id))

    async def cancel(ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, Any]:
        return await run(tasks.cancel(caller_of(ctx), params.task_id))

    server.add_request_handler("tasks/get", TaskParams, get)
    server.add_request_handler("tasks/update", TaskUpdateParams, update)
    server.add_request_handler("tasks/cancel", TaskParams, cancel)
    server.extensions[TASKS_EXTENSION] = {}
