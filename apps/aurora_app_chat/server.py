"""The `aurora-app-chat` MCP server: a simulated IM whose tools are the platform's action targets.

Write tools (`send_message`, `react`, `respond_friend_request`) record what they "sent" (see
`SentLog`); read tools (`get_user_info`, `list_sent`) change nothing. The `simulate_*` tools stand
in for the IM's own traffic: each emits a native `aurora/event` (`message.received`,
`friend.request_received`, `group.member_joined`, `interaction.submitted`) with the real routing fields (session, actor,
subject) and the platform's raw name in `source_event_type` — never invented text or actors.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.session import ServerSession
from mcp_types import ToolAnnotations

from apps.common import send_event

from . import events
from .conversation import Received
from .events import Emission
from .sent import SentLog

SERVER_NAME = "aurora-app-chat"

# Where Aurora's gateway puts a write's idempotency key (its call id) in a tool call's `_meta`.
IDEMPOTENCY_META_KEY = "aurora/idempotency_key"

READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
# Writes to the chat: visible to people, not destructive of anything that existed before.
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True)
IDEMPOTENT_WRITE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)
# Test helpers: they only make the app emit an event, nothing is sent to anyone.
SIMULATE = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def now_iso() -> str:
    return datetime.now(UTC).isoformat()


def _new_id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


class NotConnected(RuntimeError):
    """No MCP client has initialized a session yet: there is nobody to emit an event to."""


class ChatApp:
    """Holds the sent log, what it has seen of users and emitted, the client session and the MCPServer."""

    def __init__(self, startup: dict[str, Any], sent: SentLog | None = None) -> None:
        self.bot: str = str(startup.get("bot") or "aurora-bot")
        self.sent = sent or SentLog()
        self.received = Received()
        self.send_delay = float(startup.get("send_delay_seconds") or 0)
        self.seen_users: dict[str, set[str]] = {}  # user id → sessions it was seen in
        self.friend_requests: dict[str, str] = {}  # request id → user id
        # The platform's session, kept once it is initialized, so the web page can emit events too.
        self.session: ServerSession | None = None
        self.server: MCPServer = MCPServer(
            SERVER_NAME,
            version="0.1.0",
            instructions="A simulated IM: send messages, react, answer friend requests; simulate_* emit events.",
            log_level=str(startup.get("log_level", "INFO")).upper(),  # type: ignore[arg-type]
            middleware=[self._keep_session],
        )
        self._register_tools()

    async def _keep_session(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method == "notifications/initialized":
            self.session = ctx.session  # a re-initialized client (stdio: the same pipe) replaces it
        return result

    # -- events ---------------------------------------------------------------------------
    async def emit(self, emission: Emission, session: ServerSession | None = None) -> dict[str, Any]:
        """Send `emission` as `aurora/event` on `session` (else the kept one); its params."""
        target = session or self.session
        if target is None:
            raise NotConnected("the platform has not connected to the chat app yet; retry in a moment")
        if emission.event_type == "friend.request_received":
            self.friend_requests[emission.subject[1]] = emission.actor[0]
        if emission.actor[1] == "user":
            sessions = self.seen_users.setdefault(emission.actor[0], set())
            if emission.session_id is not None:
                sessions.add(emission.session_id)
        params = emission.params(self.bot)
        await send_event(target, params)
        self.received.add(params, shown_in=emission.shown_in)
        return params

    # -- tools ----------------------------------------------------------------------------
    def _register_tools(self) -> None:
        mcp = self.server

        @mcp.tool(annotations=WRITE)
        async def send_message(ctx: Context, session_id: str, text: str, reply_to: str | None = None,
                               interaction_id: str | None = None) -> dict[str, Any]:
            """Send `text` to the conversation `session_id` (optionally as a reply to message `reply_to`;
            a question carries its `interaction_id`, which the page answers under and never shows in text).
            Sent again with the same idempotency key (`_meta`), it returns the first result and sends nothing."""
            if not text.strip():
                raise ToolError("text is empty: nothing to send")
            meta = ctx.request_context.meta or {}
            key = meta.get(IDEMPOTENCY_META_KEY)
            sent = self.sent.append_once(key if isinstance(key, str) and key else None, {
                "kind": "message", "message_id": _new_id("msg"), "session_id": session_id, "text": text,
                "reply_to": reply_to, "at": now_iso(),
                **({"interaction_id": interaction_id} if interaction_id else {}),
            })
            if self.send_delay > 0:  # a slow IM: the message is out, its acknowledgement takes a while
                await anyio.sleep(self.send_delay)
            return sent

        @mcp.tool(annotations=IDEMPOTENT_WRITE)
        def react(session_id: str, message_id: str, reaction: str) -> dict[str, Any]:
            """Add the reaction `reaction` (e.g. an emoji) to message `message_id` in `session_id`."""
            if not reaction.strip():
                raise ToolError("reaction is empty")
            return self.sent.append({
                "kind": "reaction", "session_id": session_id, "message_id": message_id, "reaction": reaction,
                "at": now_iso(),
            })

        @mcp.tool(annotations=WRITE)
        def respond_friend_request(request_id: str, accept: bool, message: str | None = None) -> dict[str, Any]:
            """Accept or decline the friend request `request_id`, optionally with a message; once per request."""
            answered = [r for r in self.sent.records()
                        if r.get("kind") == "friend_response" and r.get("request_id") == request_id]
            if answered:
                verdict = "accepted" if answered[0].get("accept") else "declined"
                raise ToolError(f"friend request {request_id} was already {verdict}")
            return self.sent.append({
                "kind": "friend_response", "request_id": request_id, "user_id": self.friend_requests.get(request_id),
                "accept": accept, "message": message, "at": now_iso(),
            })

        @mcp.tool(annotations=READ)
        def get_user_info(actor_id: str) -> dict[str, Any]:
            """Profile of user `actor_id`: nickname and the conversations the app has seen them in."""
            sessions = sorted(self.seen_users.get(actor_id, set()))
            return {"id": actor_id, "kind": "user", "nickname": f"user-{actor_id}",
                    "known": actor_id in self.seen_users, "sessions": sessions}

        @mcp.tool(annotations=READ)
        def list_sent(session_id: str | None = None) -> dict[str, Any]:
            """Everything the app has sent so far (messages, reactions, friend-request answers), oldest first;
            with `session_id`, only what went to that conversation."""
            items = [r for r in self.sent.records() if session_id is None or r.get("session_id") == session_id]
            return {"items": items, "count": len(items)}

        @mcp.tool(annotations=SIMULATE)
        async def simulate_message(ctx: Context, session_id: str, text: str, user_id: str = "u1") -> dict[str, Any]:
            """Simulate user `user_id` writing `text` in `session_id`: emits `message.received`."""
            emission = events.message_received(session_id, text, user_id)
            return {**emission.ids, "event": await self.emit(emission, ctx.session)}

        @mcp.tool(annotations=SIMULATE)
        async def simulate_friend_request(ctx: Context, user_id: str, note: str = "") -> dict[str, Any]:
            """Simulate user `user_id` asking to be friends: emits `friend.request_received`."""
            emission = events.friend_request(user_id, note)
            return {**emission.ids, "event": await self.emit(emission, ctx.session)}

        @mcp.tool(annotations=SIMULATE)
        async def simulate_interaction_answer(ctx: Context, interaction_id: str, value: str, session_id: str,
                                              user_id: str = "u1") -> dict[str, Any]:
            """Simulate user `user_id` answering the question `interaction_id` in `session_id` with `value`
            (an option's number or label): emits `interaction.submitted`."""
            emission = events.interaction_answer(interaction_id, value, session_id, user_id)
            return {"event": await self.emit(emission, ctx.session)}

        @mcp.tool(annotations=SIMULATE)
        async def simulate_member_joined(ctx: Context, session_id: str, user_id: str) -> dict[str, Any]:
            """Simulate user `user_id` joining the group `session_id`: emits `group.member_joined`."""
            return {"event": await self.emit(events.member_joined(session_id, user_id), ctx.session)}
