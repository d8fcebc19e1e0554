"""Requests from the edge to its 2025-11-25 clients within an open tool call, across instances.

The SDK runs stateless under the edge (sessions live in KV, `http_app`), and its stateless
path refuses server-to-client requests: the client's answer is a separate POST that a fresh
transport would not know. The edge knows the session, so it serves those POSTs itself: its
manager (`EdgeSessionManager`) lets a request of a known session write requests on its own
response stream, numbering them with random ids (each transport counts from 1, and two calls
of one session must not share ids), and keeps the transports in flight per session
(`ClientReplies`). A client's answer — a POST of a JSON-RPC response, to whichever instance —
is published on `<p>.edge.reply.<session>`; every instance hears it and hands it to its
transports of that session, and the one whose request has that id takes it (the others' SDK
dispatchers ignore an id they did not send).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Iterator
from typing import Any

import anyio
from anyio.abc import TaskStatus
from mcp.server.connection import Connection
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_connection
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.transport_context import TransportContext
from mcp_types import DEFAULT_NEGOTIATED_VERSION
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from starlette.types import Message, Receive, Scope, Send

from shared.contracts.subjects import Subjects
from shared.lifecycle import Lifecycle, unsubscribe
from shared.nats.request_guard import refusing_deliveries
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_edge.backchannel")
SESSION_STATE = "aurora_session"  # key in the ASGI scope's state: the KV session a request belongs to
_JSON_HEADERS = [(b"content-type", b"application/json"), (b"accept", b"application/json, text/event-stream")]


class _RandomIds(JSONRPCDispatcher[TransportContext]):
    """Request ids no other call of the session uses (the SDK counts from 1 per transport)."""

    def _allocate_id(self) -> int:
        return secrets.randbits(52)  # stays exact in a JSON number


def is_response(message: Any) -> bool:
    """A JSON-RPC response (or error) from the client: an id, no method."""
    return isinstance(message, dict) and "method" not in message and "id" in message and (
        "result" in message or "error" in message)


class ClientReplies(Lifecycle[None]):
    """The transports of this instance's calls, per session, and the answers meant for them."""

    def __init__(self, nc: NATS, subjects: Subjects) -> None:
        super().__init__("the edge's client replies")
        self._nc = nc
        self._subjects = subjects
        self._open: dict[str, set[StreamableHTTPServerTransport]] = {}

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        subject = self._subjects.edge_client_replies  # a stream delivery is no client's answer
        parts.push_async_callback(unsubscribe, await self._nc.subscribe(
            subject, cb=refusing_deliveries(subject, self._heard)))

    @contextlib.contextmanager
    def serving(self, session_id: str, transport: StreamableHTTPServerTransport) -> Iterator[None]:
        self._open.setdefault(session_id, set()).add(transport)
        try:
            yield
        finally:
            transports = self._open.get(session_id, set())
            transports.discard(transport)
            if not transports:
                self._open.pop(session_id, None)

    async def publish(self, session_id: str, body: bytes) -> None:
        """A client's answer, to whichever instance's call sent the request."""
        await self._nc.publish(self._subjects.edge_client_reply(session_id), body)

    async def _heard(self, msg: Msg) -> None:
        session_id = msg.subject.rsplit(".", 1)[-1]
        for transport in list(self._open.get(session_id, ())):
            await _feed(transport, msg.data)


async def _feed(transport: StreamableHTTPServerTransport, body: bytes) -> None:
    """Hand `body` to `transport` as the POST it was (its dispatcher takes the id it waits for)."""
    scope: Scope = {"type": "http", "method": "POST", "path": "/", "headers": _JSON_HEADERS, "query_string": b""}
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def discard(message: Message) -> None:
        return None

    try:
        await transport.handle_request(scope, receive, discard)
    except Exception:  # a transport that just ended: its call is gone, nothing waits for this
        log.debug("an answer reached an ended call")


class EdgeSessionManager(StreamableHTTPSessionManager):
    """The SDK's stateless manager, but a request of a known session may ask its client."""

    def __init__(self, app: Server[Any], replies: ClientReplies) -> None:
        super().__init__(app, stateless=True)
        self._replies = replies

    async def _handle_stateless_request(self, protocol_version_hint: str | None, scope: Scope, receive: Receive,
                                        send: Send) -> None:
        session_id = scope.get("state", {}).get(SESSION_STATE)
        if not isinstance(session_id, str):
            await super()._handle_stateless_request(protocol_version_hint, scope, receive, send)
            return
        transport = StreamableHTTPServerTransport(mcp_session_id=None, is_json_response_enabled=self.json_response,
                                                  event_store=None, security_settings=self.security_settings)

        async def run_server(*, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
            async with transport.connect() as (read_stream, write_stream):
                task_status.started()
                dispatcher = _RandomIds(read_stream, write_stream, inline_methods=frozenset({"initialize"}),
                                        transport_builder=lambda _md: TransportContext(kind="streamable-http",
                                                                                           can_send_request=True))
                connection = Connection.from_envelope(protocol_version_hint or DEFAULT_NEGOTIATED_VERSION, None, None)
                try:
                    await serve_connection(self.app, dispatcher, connection=connection,
                                           lifespan_state=self._lifespan_state)
                except Exception:
                    log.exception("a session's request crashed", session=session_id)

        if self._task_group is None:
            raise RuntimeError("the session manager is not running")
        try:
            with self._replies.serving(session_id, transport):
                await self._task_group.start(run_server)
                await transport.handle_request(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await transport.terminate()


class ManagerRunning(Lifecycle[None]):
    """The session manager's task group (the SDK's `run()`, which it enters once), from start to
    stop: each request's server runs in it, so the HTTP server starts after it and stops before."""

    def __init__(self, manager: EdgeSessionManager) -> None:
        super().__init__("the edge's session manager")
        self.manager = manager

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        await parts.enter_async_context(self.manager.run())
