"""The edge's A2A surface: the SDK's JSON-RPC and HTTP+JSON routes, per agent, over Aurora tasks.

Mounted by `EdgeApp` (http_app.py), which authenticates every request but the Agent Card with
the agent's bearer token, exactly as for `/agents/<id>/mcp`, and puts the caller in the ASGI
scope's state; the context builder here hands it to the handler. Routes, for agent `<id>`:

    GET  /agents/<id>/.well-known/agent-card.json     the card (also under /agents/<id>/a2a/)
    POST /agents/<id>/a2a                             JSON-RPC: SendMessage, SendStreamingMessage,
                                                      GetTask, CancelTask, SubscribeToTask
    …    /agents/<id>/a2a/rest/message:send, /tasks/<task id>, … the HTTP+JSON binding
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import DefaultServerCallContextBuilder, create_jsonrpc_routes, create_rest_routes
from nats.aio.client import Client as NATS
from nats.js.errors import KeyNotFoundError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from services.mcp_edge.a2a.aurora_tasks import AuroraTasks
from services.mcp_edge.a2a.card import CARD_PATHS, HTTP_JSON_PATH, JSONRPC_PATH, agent_card
from services.mcp_edge.a2a.handler import CALLER, AuroraRequestHandler
from services.mcp_edge.asgi import ASGIApp
from services.mcp_edge.gate import Caller, EdgeTool
from services.mcp_edge.http_app import base_url
from services.mcp_edge.mcp_server import CALLER_STATE, VERSION
from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.subjects import Subjects
from shared.jetstream.bucket import Bucket
from shared.jetstream.streams import (
    agents_bucket,
    approvals_bucket,
    bindings_bucket,
    ensure_bucket,
    run_records_bucket,
    tasks_bucket,
)
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_edge.a2a")
AGENT = "/agents/{agent}"


class AgentTools(Protocol):
    """What the card needs of the gateway (`gate.Gate`): the agent's tools, None if no such agent."""

    async def tools(self, agent: str) -> list[EdgeTool] | None: ...


class CallerContext(DefaultServerCallContextBuilder):
    """The SDK's context, with the caller `EdgeApp` authenticated."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        caller = request.scope.get("state", {}).get(CALLER_STATE)
        if isinstance(caller, Caller) and caller.agent == request.path_params.get("agent"):
            context.state[CALLER] = caller
        return context


@dataclass(frozen=True)
class CardSource:
    tools: AgentTools
    agents: Bucket
    public_url: str | None

    async def document(self, agent: str) -> dict[str, Any] | None:
        try:
            entry = await self.agents.get(agent)
        except (KeyNotFoundError, ValueError):
            return None
        if not entry.value:
            return None
        decoded = msgspec.json.decode(entry.value)
        return decoded if isinstance(decoded, dict) else None

    async def serve(self, request: Request) -> Response:
        agent = request.path_params["agent"]
        tools = await self.tools.tools(agent)
        if tools is None:
            return JSONResponse({"error": f"no agent {agent!r}"}, status_code=404)
        base = base_url(request.scope, self.public_url)
        card = agent_card(base, agent, await self.document(agent), tools, version=VERSION)
        return JSONResponse(agent_card_to_dict(card), headers={"cache-control": "no-cache"})


def a2a_app(tasks: AuroraTasks, cards: CardSource, *, instance: str, wait_seconds: float = 30.0) -> ASGIApp:
    handler = AuroraRequestHandler(tasks, instance=instance, wait_seconds=wait_seconds)
    context = CallerContext()
    routes: list[BaseRoute] = [Route(AGENT + path, cards.serve, methods=["GET"]) for path in CARD_PATHS]
    # v0.3 clients too (`message/send`, `tasks/get` …), on the same URLs: the SDK's adapters.
    routes += create_jsonrpc_routes(handler, AGENT + JSONRPC_PATH, context_builder=context, enable_v0_3_compat=True)
    routes += create_rest_routes(handler, context_builder=context, path_prefix=AGENT + HTTP_JSON_PATH,
                                 enable_v0_3_compat=True)
    app: ASGIApp = Starlette(routes=routes)
    return app


async def build_a2a(nc: NATS, subjects: Subjects, gate: AgentTools, *, public_url: str | None,
                    instance: str | None = None, plan: StreamPlan = DEFAULT_PLAN,
                    wait_seconds: float = 30.0) -> ASGIApp:
    """The A2A app over the buckets it reads (each created here if missing, as the edge's other
    buckets are, so that any service may start first); it starts nothing. `instance` names this
    edge as the events' source instance (default: the host name)."""
    js = nc.jetstream()

    async def bucket(spec: Any) -> Bucket:
        return await ensure_bucket(js, spec, plan=plan)

    tasks = AuroraTasks(nc, subjects, tasks=await bucket(tasks_bucket(subjects)),
                        records=await bucket(run_records_bucket(subjects)),
                        bindings=await bucket(bindings_bucket(subjects)),
                        approvals=await bucket(approvals_bucket(subjects)))
    cards = CardSource(gate, await bucket(agents_bucket(subjects)), public_url)
    return a2a_app(tasks, cards, instance=instance or socket.gethostname()[:64] or "default",
                   wait_seconds=wait_seconds)
