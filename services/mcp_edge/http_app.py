"""The edge's HTTP surface: `/agents/<id>/mcp` behind bearer tokens, and the RFC 9728 metadata.

In front of the SDK's Streamable HTTP handling, this layer decides what the SDK cannot do across
processes: who calls (the token, checked on every request; 401 with `WWW-Authenticate` naming
the protected-resource metadata), and which session a 2025-11-25 request belongs to — kept in
NATS KV, so that any instance serves it. The SDK runs stateless underneath: an `initialize`
gets its `Mcp-Session-Id` added here; later requests are checked against KV here. The
session's GET stream (server notifications) is served here too, from `ListChanges`. A
session's POST of a JSON-RPC response answers a request one of its calls sent (`backchannel`).
2026-07-28 requests carry no session and go to the SDK as they are (it checks their `Mcp-Method`,
`Mcp-Name` and `MCP-Protocol-Version` headers against the body, and answers -32022 to a version
it does not speak); one that names its version only in `_meta` is told its header is missing
(the SDK would take it for the oldest era); that era's GET or DELETE is answered 405. In front of all of it,
`shared.web_origin` answers 403 to a `Host` or `Origin` that is not the edge's own (the MCP
transport's DNS-rebinding rule; `origin_refusal` is the body), and JSON bodies are read with a
bound on nesting (`shared.bounded_json`). Beside the MCP endpoint, when given one, the agent's A2A
app (services/mcp_edge/a2a/): `/agents/<id>/a2a…` behind the same token, the Agent Card without.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from typing import Any

from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from services.mcp_edge.asgi import ASGIApp, Message, Receive, Scope, Send, header, read_body, replay, respond
from services.mcp_edge.backchannel import SESSION_STATE, ClientReplies, is_response
from services.mcp_edge.changes import ListChanges
from services.mcp_edge.eras import initialize_of, without_version_header
from services.mcp_edge.gate import Caller
from services.mcp_edge.mcp_server import CALLER_STATE
from services.mcp_edge.sessions import SessionStore
from services.mcp_edge.tokens import TokenRecord, TokenStore
from shared.bounded_json import BadJson, loads_bounded
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_edge.http")
_ENDPOINT = re.compile(r"^/agents/([A-Za-z0-9_.-]{1,128})/mcp/?$")
# A2A (services/mcp_edge/a2a/): the bindings under /a2a, and the Agent Card, which needs no token.
_A2A = re.compile(r"^/agents/([A-Za-z0-9_.-]{1,128})/(?:a2a(?:/.*)?|\.well-known/agent-card\.json)$")
_CARD_SUFFIX = "/.well-known/agent-card.json"
METADATA_PREFIX = "/.well-known/oauth-protected-resource"
SESSION_HEADER = "mcp-session-id"
KEEPALIVE_SECONDS = 15.0


def base_url(scope: Scope, public_url: str | None) -> str:
    if public_url:
        return public_url.rstrip("/")
    host = header(scope, "host") or "{}:{}".format(*scope.get("server") or ("127.0.0.1", 80))
    return f"{scope.get('scheme', 'http')}://{host}"


def metadata_url(base: str, agent: str) -> str:
    return f"{base}{METADATA_PREFIX}/agents/{agent}/mcp"


def protected_resource(base: str, agent: str, authorization_servers: tuple[str, ...]) -> dict[str, Any]:
    """RFC 9728 metadata: the resource, and that a bearer token goes in the header. The
    authorization servers are listed when configured (`aurora tokens create` issues tokens
    without one)."""
    document: dict[str, Any] = {
        "resource": f"{base}/agents/{agent}/mcp",
        "bearer_methods_supported": ["header"],
        "resource_name": f"Aurora agent {agent}",
        "resource_documentation": "create a token with `aurora tokens create --agent <id>`",
    }
    if authorization_servers:
        document["authorization_servers"] = list(authorization_servers)
    return document


def jsonrpc_error(message: str, code: int = -32600) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


def origin_refusal(reason: str, message: str) -> dict[str, Any]:
    """The 403 body for a foreign Host or Origin: a JSON-RPC error whose data names which."""
    body = jsonrpc_error(message)
    body["error"]["data"] = {"reason": reason}
    return body


class EdgeApp:
    def __init__(self, sdk: ASGIApp, tokens: TokenStore, sessions: SessionStore, changes: ListChanges,
                 replies: ClientReplies, *, public_url: str | None = None,
                 authorization_servers: tuple[str, ...] = (), a2a: ASGIApp | None = None) -> None:
        self._sdk = sdk
        self._a2a = a2a
        self._replies = replies
        self._tokens = tokens
        self._sessions = sessions
        self._changes = changes
        self._public_url = public_url
        self._authorization_servers = authorization_servers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        if path.startswith(METADATA_PREFIX):
            found = _ENDPOINT.fullmatch(path[len(METADATA_PREFIX):])
            if found is None or scope["method"] != "GET":
                await respond(send, 404, {"error": "no such protected resource"})
                return
            base = base_url(scope, self._public_url)
            await respond(send, 200, protected_resource(base, found.group(1), self._authorization_servers))
            return
        a2a = _A2A.fullmatch(path) if self._a2a is not None else None
        if a2a is not None and self._a2a is not None:
            await self._to_a2a(self._a2a, scope, receive, send, a2a.group(1))
            return
        found = _ENDPOINT.fullmatch(path)
        if found is None:
            await respond(send, 404, {"error": "not found: MCP endpoints are /agents/<agent id>/mcp"})
            return
        agent = found.group(1)
        record = await self._authenticate(scope, send, agent)
        if record is None:
            return
        method = scope["method"]
        session_id = header(scope, SESSION_HEADER)
        version = header(scope, "mcp-protocol-version")
        modern = version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS
        if method == "POST" and modern:  # 2026-07-28: each request stands alone
            await self._to_sdk(scope, receive, send, Caller(agent, record.id, record.name))
            return
        if method in ("GET", "DELETE") and session_id is None and modern:  # that era has neither
            await respond(send, 405, jsonrpc_error(f"{method} is not part of MCP {version}: POST each request"),
                          [(b"allow", b"POST")])
            return
        if method == "POST" and session_id is None:
            body = await read_body(receive)
            params = initialize_of(body)
            refusal = without_version_header(body) if params is None else None
            if refusal is not None:
                await respond(send, 400, refusal)
                return
            if params is None:
                await respond(send, 400, jsonrpc_error("no Mcp-Session-Id: send initialize first"))
                return
            await self._initialize(scope, replay(body, receive), send, agent, record, params)
            return
        if session_id is None:
            await respond(send, 400, jsonrpc_error("this request needs an Mcp-Session-Id"))
            return
        session = await self._sessions.get(session_id)
        if session is None or session.agent != agent:
            await respond(send, 404, jsonrpc_error("unknown or ended session: initialize again"))
            return
        if session.token_id != record.id:
            await respond(send, 403, jsonrpc_error("this session belongs to another token"))
            return
        caller = Caller(agent, record.id, record.name, session_id=session_id,
                        capabilities=frozenset(session.capabilities))
        if method == "POST":
            body = await read_body(receive)
            if _is_client_answer(body):  # to a request a call of this session sent, on any instance
                await self._replies.publish(session_id, body)
                await respond(send, 202)
                return
            await self._to_sdk(scope, replay(body, receive), send, caller)
        elif method == "GET":
            await self._stream(scope, receive, send, caller)
        elif method == "DELETE":
            await self._sessions.close(session_id)
            await respond(send, 200)
        else:
            await respond(send, 405, jsonrpc_error(f"{method} is not served here"), [(b"allow", b"GET, POST, DELETE")])

    async def _authenticate(self, scope: Scope, send: Send, agent: str) -> TokenRecord | None:
        challenge = f'Bearer resource_metadata="{metadata_url(base_url(scope, self._public_url), agent)}"'
        value = header(scope, "authorization") or ""
        scheme, _, token = value.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            await respond(send, 401, jsonrpc_error("a bearer token is required (aurora tokens create)"),
                          [(b"www-authenticate", challenge.encode())])
            return None
        checked = await self._tokens.check(token.strip())
        if isinstance(checked, str):
            described = f'{challenge}, error="invalid_token", error_description="{checked}"'
            await respond(send, 401, jsonrpc_error(checked), [(b"www-authenticate", described.encode())])
            return None
        if checked.agent != agent:
            described = f'{challenge}, error="insufficient_scope", error_description="the token is for another agent"'
            await respond(send, 403, jsonrpc_error(f"this token is not for agent {agent!r}"),
                          [(b"www-authenticate", described.encode())])
            return None
        return checked

    async def _to_a2a(self, app: ASGIApp, scope: Scope, receive: Receive, send: Send, agent: str) -> None:
        """The Agent Card to anyone; everything else with the agent's token, as for MCP."""
        if not scope["path"].endswith(_CARD_SUFFIX):
            record = await self._authenticate(scope, send, agent)
            if record is None:
                return
            scope.setdefault("state", {})[CALLER_STATE] = Caller(agent, record.id, record.name)
        await app(scope, receive, send)

    async def _to_sdk(self, scope: Scope, receive: Receive, send: Send, caller: Caller) -> None:
        state = scope.setdefault("state", {})
        state[CALLER_STATE] = caller
        if caller.session_id is not None:
            state[SESSION_STATE] = caller.session_id
        await self._sdk(scope, receive, send)

    async def _initialize(self, scope: Scope, receive: Receive, send: Send, agent: str, record: TokenRecord,
                          params: dict[str, Any]) -> None:
        info = params.get("clientInfo")
        client = str(info.get("name")) if isinstance(info, dict) and info.get("name") else None
        version = params.get("protocolVersion")
        declared = params.get("capabilities")
        capabilities = [str(k) for k in declared] if isinstance(declared, dict) else []
        session = await self._sessions.open(agent, record.id, str(version) if version else None, client,
                                            capabilities)
        log.info("session opened", agent=agent, token=record.id, session=session.id, client=client)

        async def with_session_id(message: Message) -> None:
            if message["type"] == "http.response.start" and message.get("status") == 200:
                message = {**message, "headers": [*message.get("headers", []),
                                                  (SESSION_HEADER.encode(), session.id.encode())]}
            await send(message)

        await self._to_sdk(scope, receive, with_session_id, Caller(agent, record.id, record.name, session.id,
                                                                   frozenset(capabilities)))

    async def _stream(self, scope: Scope, receive: Receive, send: Send, caller: Caller) -> None:
        """The session's server-to-client stream: list_changed as it happens, a comment to keep
        proxies from closing it. Ends when the client goes."""
        if "text/event-stream" not in (header(scope, "accept") or ""):
            await respond(send, 406, jsonrpc_error("the GET stream needs Accept: text/event-stream"))
            return
        queue = await self._changes.listen(caller.agent)
        log.info("stream open", agent=caller.agent, session=caller.session_id)
        gone = asyncio.create_task(_disconnected(receive), name="edge-stream-disconnect")
        try:
            await send({"type": "http.response.start", "status": 200, "headers": [
                (b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache"),
                (SESSION_HEADER.encode(), (caller.session_id or "").encode())]})
            await send({"type": "http.response.body", "body": b": stream open\n\n", "more_body": True})
            while not gone.done():
                waiting = asyncio.create_task(queue.get())
                done, _ = await asyncio.wait({waiting, gone}, timeout=KEEPALIVE_SECONDS,
                                             return_when=asyncio.FIRST_COMPLETED)
                if waiting in done:
                    message = {"jsonrpc": "2.0", "method": waiting.result()}
                    event = f"event: message\ndata: {json.dumps(message)}\n\n".encode()
                    await send({"type": "http.response.body", "body": event, "more_body": True})
                    continue
                waiting.cancel()
                if not gone.done():
                    await send({"type": "http.response.body", "body": b": keepalive\n\n", "more_body": True})
        except OSError:
            pass  # the client went while we were writing
        finally:
            self._changes.leave(caller.agent, queue)
            gone.cancel()
            with contextlib.suppress(BaseException):
                await gone


def _is_client_answer(body: bytes) -> bool:
    try:
        return is_response(loads_bounded(body))
    except BadJson:
        return False


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
