"""The edge's parts, built by `build_edge`: its buckets (tokens, sessions), the gate to the
gateway, the tool-list changes and the watches that poke them, the token admin endpoints, the
client replies, the MCP session manager and the HTTP server.

`__main__` runs one per process; any number may run behind one address (their sessions and
tokens are in NATS KV). Tests build it in-process against a real nats-server. The start order is
the `order` tuple below, the stop order its reverse (`shared.wiring.Assembly`): the HTTP server
starts last and stops first, so nothing a request reaches is stopped while requests come in. A
start that fails half-way (the port taken) stops what had started.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.mcp_edge.a2a.app import build_a2a
from services.mcp_edge.admin import token_endpoints
from services.mcp_edge.asks import ClientAsks
from services.mcp_edge.backchannel import ClientReplies, EdgeSessionManager, ManagerRunning
from services.mcp_edge.changes import ListChanges
from services.mcp_edge.config import EdgeSettings
from services.mcp_edge.edge_tasks import EdgeTasks
from services.mcp_edge.gate import Gate
from services.mcp_edge.http_app import EdgeApp
from services.mcp_edge.http_server import EdgeHttpServer
from services.mcp_edge.mcp_server import VERSION, build_server, rendered
from services.mcp_edge.sessions import SessionStore, sessions_bucket
from services.mcp_edge.tokens import TokenStore, tokens_bucket
from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.subjects import Subjects
from shared.jetstream.kvmirror import KvMirror
from shared.jetstream.streams import agents_bucket, approvals_bucket, ensure_bucket, tools_bucket
from shared.nats import write_through
from shared.nats.admin_service import start_admin_service
from shared.wiring import Assembly, Connections, StartedBy


@dataclass(frozen=True)
class EdgeSetup:
    """What the edge read before connecting: its settings (address, public URL, origins, waits)
    and the streams' plan."""

    subjects: Subjects
    settings: EdgeSettings
    plan: StreamPlan = DEFAULT_PLAN


@dataclass(frozen=True)
class EdgeParts:
    tokens: TokenStore
    sessions: SessionStore
    gate: Gate
    changes: ListChanges
    tools_watch: KvMirror[bytes]
    agents_watch: KvMirror[bytes]
    admin: StartedBy
    replies: ClientReplies
    manager: ManagerRunning
    http: EdgeHttpServer  # `http.port`: the port it serves on, once started


EdgeService = Assembly[EdgeParts]


async def build_edge(setup: EdgeSetup, connections: Connections) -> EdgeService:
    nc, js, subjects, settings, plan = connections.nc, connections.js, setup.subjects, setup.settings, setup.plan
    tokens = TokenStore(await ensure_bucket(js, tokens_bucket(subjects), plan=plan))
    sessions_kv = await ensure_bucket(js, sessions_bucket(subjects), plan=plan)  # sessions, and held calls' tasks
    sessions = SessionStore(sessions_kv)
    # Read only: the gateway writes them (created here too, so that either may start first).
    approvals = await ensure_bucket(js, approvals_bucket(subjects), plan=plan)
    gate = Gate(nc, subjects, approvals, call_timeout=settings.call_timeout_seconds)
    changes = ListChanges(gate.tools, refresh_seconds=settings.refresh_seconds)
    # A change in the tools or agents bucket pokes the changes at once (they also refresh on a timer).
    tools_watch, agents_watch = [
        KvMirror(await ensure_bucket(js, spec, plan=plan), bytes, name=spec.name, on_change=changes.changed)
        for spec in (tools_bucket(subjects), agents_bucket(subjects))]
    admin = StartedBy("the edge's token endpoints", lambda: start_admin_service(
        nc, subjects, name="aurora-mcp-edge", version=VERSION,
        areas={"tokens": token_endpoints(tokens, gate.agent_exists)},
        description="bearer tokens of external MCP clients"))
    replies = ClientReplies(nc, subjects)
    tasks = EdgeTasks(sessions_kv, gate, rendered)
    server = build_server(gate, ClientAsks(nc, subjects), changes, approval_wait_seconds=settings.approval_wait_seconds,
                          tasks=tasks)
    manager = EdgeSessionManager(server, replies)
    # Each agent as an A2A server beside its MCP endpoint (services/mcp_edge/a2a/): reads tasks, starts nothing.
    a2a = await build_a2a(nc, subjects, gate, public_url=settings.public_url, plan=plan)
    app = EdgeApp(manager.handle_request, tokens, sessions, changes, replies, public_url=settings.public_url,
                  authorization_servers=settings.authorization_servers, a2a=a2a)
    running = ManagerRunning(manager)
    http = EdgeHttpServer(app, settings)
    parts = EdgeParts(tokens, sessions, gate, changes, tools_watch, agents_watch, admin, replies, running, http)

    async def ready() -> None:
        await write_through.flush(nc)  # "ready" means the token endpoints' subscriptions reached the server

    return Assembly("the mcp-edge service", parts,
                    (changes, tools_watch, agents_watch, admin, replies, running, http), ready=ready)
