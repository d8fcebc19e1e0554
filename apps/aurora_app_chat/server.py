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
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.session import ServerSession
from mcp_types import ToolAnnotations

from apps.common import event_params, send_event

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


def _raw_message_type(session_id: str) -> str:
    """The OneBot-style raw name a QQ adapter would report."""
    return "message.group" if session_id.startswith("group") else "message.private"


class ChatApp:
    """Holds the sent log, what it has seen of users, and the MCPServer."""

    def __init__(self, startup: dict[str, Any], sent: SentLog | None = None) -> None:
        self.bot: str = str(startup.get("bot") or "aurora-bot")
        self.sent = sent or SentLog()
        self.send_delay = float(startup.get("send_delay_seconds") or 0)
        self.seen_users: dict[str, set[str]] = {}  # user id → sessions it was seen in
        self.friend_requests: dict[str, str] = {}  # request id → user id
        self.server: MCPServer = MCPServer(
            SERVER_NAME,
            version="0.1.0",
            instructions="A simulated IM: send messages, react, answer friend requests; simulate_* emit events.",
            log_level=str(startup.get("log_level", "INFO")).upper(),  # type: ignore[arg-type]
        )
        self._register_tools()

    # -- events ---------------------------------------------------------------------------
    async def _emit(self, session: ServerSession, event_type: str, data: dict[str, Any], *, summary: str,
                    session_id: str | None, actor_id: str, subject: tuple[str, str],
                    raw_type: str) -> dict[str, Any]:
        params = event_params(event_type, data, summary=summary, session_id=session_id)
        params["payload"].update(
            bot=self.bot,
            actor={"id": actor_id, "kind": "user"},
            subject={"kind": subject[0], "id": subject[1]},
            source_event_type=raw_type,
        )
        await send_event(session, params)
        return params

    def _saw(self, user_id: str, session_id: str | None) -> None:
        sessions = self.seen_users.setdefault(user_id, set())
        if session_id is not None:
            sessions.add(session_id)

    # -- tools ----------------------------------------------------------------------------
    def _register_tools(self) -> None:
        mcp = self.server

        @mcp.tool(annotations=WRITE)
        async def send_message(ctx: Context, session_id: str, text: str, reply_to: str | None = None) -> dict[str, Any]:
            """Send `text` to the conversation `session_id` (optionally as a reply to message `reply_to`).
            Sent again with the same idempotency key (`_meta`), it returns the first result and sends nothing."""
            if not text.strip():
                raise ToolError("text is empty: nothing to send")
            meta = ctx.request_context.meta or {}
            key = meta.get(IDEMPOTENCY_META_KEY)
            sent = self.sent.append_once(key if isinstance(key, str) and key else None, {
                "kind": "message", "message_id": _new_id("msg"), "session_id": session_id, "text": text,
                "reply_to": reply_to, "at": now_iso(),
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
            message_id = _new_id("in")
            self._saw(user_id, session_id)
            event = await self._emit(
                ctx.session, "message.received", {"text": text}, summary=f"{user_id} wrote in {session_id}",
                session_id=session_id, actor_id=user_id, subject=("message", message_id),
                raw_type=_raw_message_type(session_id))
            return {"message_id": message_id, "event": event}

        @mcp.tool(annotations=SIMULATE)
        async def simulate_friend_request(ctx: Context, user_id: str, note: str = "") -> dict[str, Any]:
            """Simulate user `user_id` asking to be friends: emits `friend.request_received`."""
            request_id = _new_id("fr")
            self.friend_requests[request_id] = user_id
            self._saw(user_id, None)
            event = await self._emit(
                ctx.session, "friend.request_received", {"note": note}, summary=f"{user_id} sent a friend request",
                session_id=None, actor_id=user_id, subject=("friend_request", request_id), raw_type="request.friend")
            return {"request_id": request_id, "event": event}

        @mcp.tool(annotations=SIMULATE)
        async def simulate_interaction_answer(ctx: Context, interaction_id: str, value: str, session_id: str,
                                              user_id: str = "u1") -> dict[str, Any]:
            """Simulate user `user_id` answering the question `interaction_id` in `session_id` with `value`
            (an option's number or label): emits `interaction.submitted`."""
            self._saw(user_id, session_id)
            event = await self._emit(
                ctx.session, "interaction.submitted", {"interaction_id": interaction_id, "value": value},
                summary=f"{user_id} answered {interaction_id}", session_id=session_id, actor_id=user_id,
                subject=("interaction", interaction_id), raw_type="message.interaction")
            return {"event": event}

        @mcp.tool(annotations=SIMULATE)
        async def simulate_member_joined(ctx: Context, session_id: str, user_id: str) -> dict[str, Any]:
            """Simulate user `user_id` joining the group `session_id`: emits `group.member_joined`."""
            self._saw(user_id, session_id)
            event = await self._emit(
                ctx.session, "group.member_joined", {"user_id": user_id}, summary=f"{user_id} joined {session_id}",
                session_id=session_id, actor_id=user_id, subject=("member", user_id), raw_type="notice.group_increase")
            return {"event": event}
