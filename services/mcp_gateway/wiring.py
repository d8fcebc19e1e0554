"""The gateway's parts, built by `build_gateway`: the pool, the outboxes, the app sessions, the
HTTP systems, the call ledger, the endpoints (tool calls and admin), the approval sweeper and the
chat answers.

`__main__` runs one per process; a test builds it in-process over a real nats-server. The build
opens the streams and buckets and starts nothing; `GatewayAssembly` starts the parts in the one
order below and stops them in its reverse (`shared.wiring.Assembly`): stop taking calls, let the
calls in flight finish (bounded), stop the ledger (none is left executing), close the MCP sessions
(the supervisor stops app processes only after that), then the outboxes, the acks they wait for,
and the pool.

The one cycle: the sessions are built with the callbacks of what an app asks back during a call
(`server_requests.callbacks.ServerRequests`); the elicitation that answers them asks its
question through the tool-call handler (`CallPipeline`: `event_reply` in the event's chat); and
that handler calls through the sessions. `ServerRequests` is built empty, given to the sessions,
and bound to its answerers here once the handler exists — in the build, so before any session
opens. It is the only part wired after construction.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import httpx

from services.mcp_gateway.admin import admin_endpoints
from services.mcp_gateway.approvals.deciders import Governance
from services.mcp_gateway.approvals.in_chat import ChatAnswers, ChatDecisions
from services.mcp_gateway.approvals.store import ApprovalStore
from services.mcp_gateway.approvals.sweeper import ApprovalSweeper
from services.mcp_gateway.calls.a2a import A2AExecutor
from services.mcp_gateway.calls.custody import Custody
from services.mcp_gateway.calls.in_flight import CallsInFlight
from services.mcp_gateway.calls.ledger import CallLedger
from services.mcp_gateway.calls.pipeline import CallPipeline
from services.mcp_gateway.calls.redaction import GatewayRedaction
from services.mcp_gateway.calls.serving import CallServer, InFlight
from services.mcp_gateway.config import GatewaySettings
from services.mcp_gateway.endpoints import GatewayEndpoints
from services.mcp_gateway.parts import CallsDrained, ClosedAtStop, OnStart
from services.mcp_gateway.pool.audit import AuditItem, audit_publisher, audit_sender_now
from services.mcp_gateway.pool.executable import Executability
from services.mcp_gateway.pool.live_catalog import ToolCatalog
from services.mcp_gateway.pool.registry import ToolPool
from services.mcp_gateway.reporting.outbox import Outbox
from services.mcp_gateway.reporting.platform_events import PlatformEvents
from services.mcp_gateway.reporting.reports import Reporting
from services.mcp_gateway.server_requests.callbacks import ServerRequests
from services.mcp_gateway.server_requests.edge_relay import EdgeRelay
from services.mcp_gateway.server_requests.elicit_answers import ElicitAnswers
from services.mcp_gateway.server_requests.elicitation import Elicitation
from services.mcp_gateway.server_requests.sampling import Sampling
from services.mcp_gateway.sessions.apps import AppSessions
from services.mcp_gateway.sessions.listener import SessionsListener
from services.mcp_gateway.sessions.status import StatusViews
from services.mcp_gateway.systems.openapi_job import OpenApiImporter
from services.mcp_gateway.systems.runtime import HttpSystems
from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.signals import SignalBase
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import (
    approval_policies_bucket,
    approvals_bucket,
    apps_bucket,
    audit_stream,
    call_ledger_bucket,
    ensure_bucket,
    ensure_streams,
    events_stream,
    fabric_streams,
    pipelines_bucket,
    run_records_bucket,
    users_bucket,
)
from shared.nats import write_through
from shared.nats.acked_publish import AckedPublisher
from shared.nats.signal_publisher import send_signal
from shared.observability import metrics
from shared.observability.logs import get_logger
from shared.people import UserRegistry
from shared.redaction import Redactor
from shared.wiring import Assembly, Connections

log = get_logger("aurora.mcp_gateway")


@dataclass(frozen=True)
class GatewaySetup:
    """What the gateway read before connecting. `redactor` learns every credential the gateway
    holds (the composition root gives the one its log lines pass through); `pool` and
    `http_client` replace the gateway's own (a test passes a pool that fails, a client with its
    own transport), which are started and stopped all the same."""

    subjects: Subjects
    settings: GatewaySettings
    plan: StreamPlan = DEFAULT_PLAN
    redactor: Redactor = field(default_factory=Redactor)
    pool: ToolPool | None = None
    http_client: httpx.AsyncClient | None = None


@dataclass(frozen=True)
class GatewayParts:
    # The long-lived parts, in their start order (`build_gateway`'s tuple).
    pool: ToolPool
    systems_credentials: OnStart
    acks: AckedPublisher
    audit: Outbox[AuditItem]
    signals: Outbox[SignalBase]
    sessions: AppSessions
    http_client: ClosedAtStop
    http: HttpSystems
    elicit_answers: ElicitAnswers
    ledger: CallLedger
    calls_drained: CallsDrained
    endpoints: GatewayEndpoints
    sweeper: ApprovalSweeper
    chat_answers: ChatAnswers
    # Built and used by them, with nothing to start: the cycle's hinge, and what tests look into.
    server_requests: ServerRequests
    handler: CallPipeline
    approvals: ApprovalStore
    catalog: ToolCatalog


GatewayAssembly = Assembly[GatewayParts]


async def build_gateway(setup: GatewaySetup, connections: Connections) -> GatewayAssembly:
    nc, js, subjects, settings, plan = connections.nc, connections.js, setup.subjects, setup.settings, setup.plan
    await ensure_streams(js, [*fabric_streams(subjects), audit_stream(subjects)], plan=plan)
    health = await ensure_bucket(js, apps_bucket(subjects), plan=plan)
    approvals_kv = await ensure_bucket(js, approvals_bucket(subjects), plan=plan)
    users_kv = await ensure_bucket(js, users_bucket(subjects), plan=plan)
    policies_kv = await ensure_bucket(js, approval_policies_bucket(subjects), plan=plan)
    ledger_kv = await ensure_bucket(js, call_ledger_bucket(subjects, settings.call_ledger_ttl_seconds), plan=plan)
    # Read only (the router writes them); created here too so that either may start first.
    custody = Custody(await ensure_bucket(js, run_records_bucket(subjects), plan=plan),
                      functools.partial(js.key_value, pipelines_bucket(subjects).name))

    pool = setup.pool or ToolPool(js, subjects, plan=plan)
    redaction = GatewayRedaction(setup.redactor, lambda: pool.tools, settings.secrets)
    redaction.learn_apps(settings.apps, settings.apps_env)
    systems_credentials = OnStart("the HTTP systems' credentials learned",
                                  lambda: redaction.learn_systems(pool.systems.values()))
    acks = AckedPublisher(nc)
    signals: Outbox[SignalBase] = Outbox("signals", functools.partial(send_signal, acks, subjects))
    audit: Outbox[AuditItem] = Outbox("audit", audit_publisher(acks, subjects),
                                      send_now=audit_sender_now(acks, subjects))
    # Built before what reports through them, so every part gets them in its constructor.
    events = PlatformEvents(nc, subjects, signals, redaction)
    reporting = Reporting(signals, audit, redaction)
    catalog = ToolCatalog()
    registry = UserRegistry(users_kv)
    governance = Governance(registry, policies_kv, lambda: pool.tools)
    listener = SessionsListener(nc, subjects, health, signals, pool, catalog)
    calls_in_flight = CallsInFlight()
    server_requests = ServerRequests(calls_in_flight)  # bound below, once the handler exists
    sessions = AppSessions(nc, subjects, settings.apps, listener, server_requests, env=settings.apps_env)
    approvals = ApprovalStore(approvals_kv, ttl_seconds=settings.approval_ttl_seconds,
                              on_expired=events.approval_expired, redact=redaction.arguments)
    metrics.observe_pending_approvals(lambda: approvals.pending)
    client = setup.http_client or httpx.AsyncClient(timeout=httpx.Timeout(30.0))
    http_client = ClosedAtStop("the HTTP systems' client", client.aclose)
    http = HttpSystems(client, lambda: pool.systems, events.system_event, secrets=redaction.read_secret)
    status = StatusViews(sessions.sessions, catalog, listener.catalog_errors, http)
    executable = Executability(lambda: pool.systems, sessions.sessions, catalog, http.circuit_open)
    ledger = CallLedger(ledger_kv, heartbeat_seconds=settings.ledger_heartbeat_seconds)
    handler = CallPipeline(
        pool, sessions.sessions, executable, approvals=approvals, apps=settings.apps, catalog=catalog,
        custody=custody, http=http, on_result=reporting.record_call,
        on_approval_requested=events.approval_requested, ledger=ledger, calls=calls_in_flight,
        governance=governance, authorize=registry.refusal,
        a2a=A2AExecutor(lambda: pool.systems, calls_in_flight, server_requests, redaction.read_secret),
    )
    elicit_answers = ElicitAnswers(nc, subjects)
    edge_relay = EdgeRelay(nc, subjects)
    server_requests.bind(
        elicitation=Elicitation(calls_in_flight, handler, elicit_answers, reporting.record_call,
                                events.interaction_requested, timeout=settings.elicitation_timeout_seconds,
                                edge=edge_relay),
        sampling=Sampling(nc, subjects, calls_in_flight, reporting.record_call, edge=edge_relay))
    in_flight = InFlight()
    calls_drained = CallsDrained(in_flight, settings.shutdown_wait_seconds)
    admin = functools.partial(  # made at the endpoints' start (after the pool's)
        admin_endpoints, sessions=sessions.sessions, catalog=catalog, status=status, events=events,
        reporting=reporting, apps=settings.apps, pool=pool, approvals=approvals, executable=executable,
        importer=OpenApiImporter(settings.openapi_limits), governance=governance, users=users_kv,
        policies=policies_kv, secrets=settings.secrets,
    )
    endpoints = GatewayEndpoints(nc, subjects, CallServer(handler, in_flight, redaction.reply), admin,
                                 registry.refusal)
    sweeper = ApprovalSweeper(approvals, settings.approval_sweep_seconds)
    chat_answers = ChatAnswers(js, subjects, approvals, events_stream(subjects).name,
                               ChatDecisions(reporting, events))

    async def ready() -> None:
        await write_through.flush(nc)  # "serving" means the endpoints' subscriptions reached the server
        log.info("serving", apps=len(sessions.sessions), tools=len(catalog.tools()))

    parts = GatewayParts(pool, systems_credentials, acks, audit, signals, sessions, http_client, http,
                         elicit_answers, ledger, calls_drained, endpoints, sweeper, chat_answers,
                         server_requests, handler, approvals, catalog)
    # The stop order is this tuple reversed. The acks stop after the outboxes that wait for them
    # (the signals outbox before the audit one, as ever); the sessions close after the calls in
    # flight finished and the ledger stopped (then none is left executing); the client after the
    # HTTP systems; the endpoints stop first of all but the background loops.
    order = (pool, systems_credentials, acks, audit, signals, sessions, http_client, http, elicit_answers,
             ledger, calls_drained, endpoints, sweeper, chat_answers)
    return Assembly("the mcp-gateway service", parts, order, ready=ready)
