"""The `aurora-app-notes` MCP server: notes CRUD plus runtime tool registration with list_changed."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.session import ServerSession
from mcp_types import ToolAnnotations, ToolListChangedNotification
from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .store import Note, NoteStore

SERVER_NAME = "aurora-app-notes"
SESSION_HEADER = "mcp-session-id"
MAX_TRACKED_SESSIONS = 64


class NoteList(BaseModel):
    notes: list[Note]
    count: int


def _session_id(ctx: ServerRequestContext[Any, Any]) -> str | None:
    headers = getattr(ctx.request, "headers", None)
    return headers.get(SESSION_HEADER) if headers is not None else None


class NotesApp:
    """Owns the store, the MCPServer, and the initialized sessions to notify when the tool list changes."""

    def __init__(self, startup: dict[str, Any]) -> None:
        self.store = NoteStore()
        for seed in startup.get("seed_notes", []):
            self.store.add(str(seed.get("title", "")), str(seed.get("body", "")))
        self.sessions: OrderedDict[str, ServerSession] = OrderedDict()
        self.dynamic_tools: set[str] = set()
        self.server: MCPServer = MCPServer(
            SERVER_NAME,
            version="0.1.0",
            instructions="A small in-memory notes app. add_tool registers tools at runtime.",
            log_level=str(startup.get("log_level", "INFO")).upper(),  # type: ignore[arg-type]
            middleware=[self._track_sessions],
        )
        self._register_tools()
        self._register_routes()

    async def _track_sessions(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Middleware: advertise tools.listChanged and remember each initialized session."""
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict):
            tools = result.setdefault("capabilities", {}).setdefault("tools", {})
            tools["listChanged"] = True
        elif ctx.method == "notifications/initialized" and (sid := _session_id(ctx)) is not None:
            self.sessions[sid] = ctx.session
            while len(self.sessions) > MAX_TRACKED_SESSIONS:
                self.sessions.popitem(last=False)
        return result

    async def notify_tools_changed(self, ctx: Context) -> int:
        """Send `notifications/tools/list_changed`: to 2026-07-28 clients on their `subscriptions/listen`
        streams; to 2025 sessions on the caller's request stream and every other session's own."""
        await ctx.notify_tools_changed()
        rc = ctx.request_context
        if _session_id(rc) is None:  # a stateless (2026-07-28) request: no session to notify on
            return 1 + len(self.sessions)
        await ctx.session.send_notification(ToolListChangedNotification(), related_request_id=rc.request_id)
        caller = _session_id(rc)
        others = [s for sid, s in self.sessions.items() if sid != caller]
        for session in others:
            await session.send_tool_list_changed()  # connection-level (standalone GET stream); never raises
        return 1 + len(others)

    def _register_tools(self) -> None:
        mcp, store = self.server, self.store

        @mcp.tool(
            annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
        )
        def add_note(title: str, body: str) -> Note:
            """Create a note and return it."""
            return store.add(title, body)

        @mcp.tool(annotations=ToolAnnotations(read_only_hint=True))
        def list_notes() -> NoteList:
            """List all notes, oldest first."""
            notes = store.all()
            return NoteList(notes=notes, count=len(notes))

        @mcp.tool(
            annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True)
        )
        def delete_note(note_id: int) -> Note:
            """Delete a note by id and return it; an unknown id is a tool error."""
            note = store.delete(note_id)
            if note is None:
                raise ToolError(f"note {note_id} not found")
            return note

        @mcp.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
        async def add_tool(
            ctx: Context, name: str, description: str = "A tool added at runtime.", reply: str = "ok"
        ) -> dict[str, Any]:
            """Register read-only tool `name` (returns `reply` + its `text` arg), then send tools/list_changed."""
            if name in {tool.name for tool in await mcp.list_tools()}:
                raise ToolError(f"tool {name!r} already exists")

            async def dynamic_tool(text: str = "") -> str:
                return f"{reply}{text}"

            mcp.add_tool(
                dynamic_tool,
                name=name,
                description=description,
                annotations=ToolAnnotations(read_only_hint=True),
            )
            self.dynamic_tools.add(name)
            notified = await self.notify_tools_changed(ctx)
            return {"added": name, "notified_sessions": notified}

        @mcp.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True))
        async def remove_tool(ctx: Context, name: str) -> dict[str, Any]:
            """Remove a tool previously created by add_tool, then send tools/list_changed."""
            if name not in self.dynamic_tools:
                raise ToolError(f"{name!r} is not a runtime-added tool")
            mcp.remove_tool(name)
            self.dynamic_tools.discard(name)
            notified = await self.notify_tools_changed(ctx)
            return {"removed": name, "notified_sessions": notified}

    def _register_routes(self) -> None:
        async def healthz(request: Request) -> Response:
            return JSONResponse({"status": "ok", "app": SERVER_NAME, "notes": len(self.store.all())})

        self.server.custom_route("/healthz", methods=["GET"])(healthz)
