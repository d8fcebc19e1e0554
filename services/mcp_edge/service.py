"""The edge's parts wired together: buckets, token admin, the MCP server, the HTTP listener.

`__main__` runs one `EdgeService` per process; any number may run behind one address (their
sessions and tokens are in NATS KV). Its lifecycle is `shared.lifecycle`'s: a start that fails
half-way (the port taken) stops what it had started.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

import uvicorn
from nats.aio.client import Client as NATS

from services.mcp_edge.admin import token_endpoints
from services.mcp_edge.asks import ClientAsks
from services.mcp_edge.backchannel import ClientReplies, EdgeSessionManager
from services.mcp_edge.changes import ListChanges
from services.mcp_edge.config import EdgeSettings
from services.mcp_edge.gate import Gate
from services.mcp_edge.http_app import EdgeApp, origin_refusal
from services.mcp_edge.mcp_server import VERSION, build_server
from services.mcp_edge.sessions import SessionStore
from services.mcp_edge.tokens import TokenStore
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import (
    DEFAULT_PLAN,
    BucketSpec,
    StreamPlan,
    agents_bucket,
    approvals_bucket,
    ensure_bucket,
    tools_bucket,
)
from shared.lifecycle import Lifecycle
from shared.nats.admin_service import start_admin_service
from shared.nats.kvmirror import KvMirror
from shared.observability.logs import get_logger
from shared.web_origin import GuardedApp

log = get_logger("aurora.mcp_edge")
DAY = 24 * 3600.0


def tokens_bucket(subjects: Subjects) -> BucketSpec:
    """Bearer tokens of external MCP clients, hashed; written by mcp-edge alone."""
    return BucketSpec(name=subjects.stream("EDGE_TOKENS"), history=1, description="mcp-edge bearer tokens")


def sessions_bucket(subjects: Subjects) -> BucketSpec:
    """MCP sessions of external clients, shared by every mcp-edge; an idle day ends one."""
    return BucketSpec(name=subjects.stream("EDGE_SESSIONS"), history=1, ttl=DAY, description="mcp-edge sessions")


class EdgeService(Lifecycle[int]):
    """Running, it serves MCP on `port` (the one bound: settings may say 0, any free one)."""

    def __init__(self, nc: NATS, subjects: Subjects, settings: EdgeSettings, *,
                 plan: StreamPlan = DEFAULT_PLAN) -> None:
        super().__init__("the mcp-edge service")
        self._nc = nc
        self._plan = plan
        self._subjects = subjects
        self._settings = settings

    @property
    def port(self) -> int:
        return self.require_started()

    async def run(self, stop: asyncio.Event) -> None:
        self.require_started()
        await stop.wait()

    async def _start(self, parts: contextlib.AsyncExitStack) -> int:
        nc, subjects, settings = self._nc, self._subjects, self._settings
        js = nc.jetstream()
        tokens = TokenStore(await ensure_bucket(js, tokens_bucket(subjects), plan=self._plan))
        sessions = SessionStore(await ensure_bucket(js, sessions_bucket(subjects), plan=self._plan))
        # Read only: the gateway writes them (created here too, so that either may start first).
        approvals = await ensure_bucket(js, approvals_bucket(subjects), plan=self._plan)
        gate = Gate(nc, subjects, approvals, call_timeout=settings.call_timeout_seconds)
        changes = ListChanges(gate.tools, refresh_seconds=settings.refresh_seconds)
        parts.push_async_callback(changes.stop)
        await changes.start()
        for spec in (tools_bucket(subjects), agents_bucket(subjects)):
            mirror: KvMirror[bytes] = KvMirror(await ensure_bucket(js, spec, plan=self._plan), bytes, name=spec.name,
                                               on_change=changes.changed)
            parts.push_async_callback(mirror.stop)
            await mirror.start()

        async def agent_exists(agent: str) -> bool:
            return await gate.tools(agent) is not None

        admin = await start_admin_service(nc, subjects, name="aurora-mcp-edge", version=VERSION,
                                          areas={"tokens": token_endpoints(tokens, agent_exists)},
                                          description="bearer tokens of external MCP clients")
        parts.push_async_callback(admin.stop)
        replies = ClientReplies(nc, subjects)
        parts.push_async_callback(replies.stop)
        await replies.start()
        server = build_server(gate, ClientAsks(nc, subjects), changes,
                              approval_wait_seconds=settings.approval_wait_seconds)
        manager = EdgeSessionManager(server, replies)
        await parts.enter_async_context(manager.run())
        app = EdgeApp(manager.handle_request, tokens, sessions, changes, replies, public_url=settings.public_url,
                      authorization_servers=settings.authorization_servers)
        return await self._listen(parts, app)

    async def _listen(self, parts: contextlib.AsyncExitStack, app: EdgeApp) -> int:
        settings = self._settings
        sock = socket.socket(socket.AF_INET6 if ":" in settings.host else socket.AF_INET)
        parts.callback(sock.close)  # after the server below stopped; at once when the bind fails
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((settings.host, settings.port))  # bound here: a port in use fails the start, loudly
        port: int = sock.getsockname()[1]
        # Only requests for the edge's own address, from no page or its own (DNS rebinding): 403 otherwise.
        guarded = GuardedApp(app, settings.origin_policy(port), body=origin_refusal,
                             on_refusal=lambda code, why: log.warning("request refused", reason=code, detail=why))
        config = uvicorn.Config(guarded, lifespan="off", log_config=None, access_log=False,
                                timeout_graceful_shutdown=5)
        http = uvicorn.Server(config)
        task = asyncio.create_task(http.serve(sockets=[sock]), name="edge-http")

        async def stop_http() -> None:
            http.should_exit = True
            await asyncio.gather(task, return_exceptions=True)

        parts.push_async_callback(stop_http)
        while not http.started:
            if task.done():
                task.result()
                raise RuntimeError("the edge's HTTP server stopped before it started")
            await asyncio.sleep(0.02)
        log.info("serving", host=settings.host, port=port, url=f"http://{settings.host}:{port}/agents/<id>/mcp")
        return port
