"""The gateway's parts wired together: pool, outboxes, sessions, HTTP systems, tool-call and admin
endpoints, the approval sweeper and the chat answers.

`__main__` runs one `GatewayService` per process. Its lifecycle is `shared.lifecycle`'s: every
part is registered for stopping as it is started, so a start-up that fails half-way stops
whatever it had started (subscriptions, sessions, HTTP clients, tasks) before it raises.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools

import httpx
from nats.aio.client import Client as NATS
from nats.micro import add_service

from services.mcp_gateway.admin import admin_endpoints
from services.mcp_gateway.approvals.deciders import Governance
from services.mcp_gateway.approvals.in_chat import ChatAnswers
from services.mcp_gateway.approvals.store import ApprovalStore
from services.mcp_gateway.calls.custody import Custody
from services.mcp_gateway.calls.in_flight import CallsInFlight
from services.mcp_gateway.calls.ledger import CallLedger
from services.mcp_gateway.calls.pipeline import CallPipeline
from services.mcp_gateway.calls.redaction import GatewayRedaction
from services.mcp_gateway.calls.serving import CallServer, InFlight, sweep_expired_approvals
from services.mcp_gateway.config import GatewaySettings
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
from shared.contracts.approval import Approval
from shared.contracts.signals import SignalBase
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import (
    DEFAULT_PLAN,
    StreamPlan,
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
from shared.lifecycle import Lifecycle
from shared.nats import write_through
from shared.nats.acked_publish import AckedPublisher
from shared.nats.admin_service import add_admin_endpoint, person_endpoint_subject
from shared.nats.inline_subscription import add_inline_endpoint
from shared.nats.signal_publisher import send_signal
from shared.observability import metrics
from shared.observability.logs import get_logger
from shared.people import UserRegistry
from shared.redaction import Redactor

VERSION = "0.1.0"
log = get_logger("aurora.mcp_gateway")


class GatewayService(Lifecycle[AppSessions]):
    """One gateway: `await start()`, `await run(stop)`, `await stop()` (`shared.lifecycle`).

    `pool` and `http_client` may be given (a test passes a pool that fails, a client with its own
    transport); the service starts and stops them all the same. `redactor` learns every credential
    the gateway holds; the composition root gives the one its log lines pass through. Its stop is the seed's shutdown
    order, the start's reversed: stop taking calls, let calls in flight finish (bounded), close
    the MCP sessions (the supervisor stops app processes only after that), then the outboxes and
    the pool.
    """

    def __init__(self, nc: NATS, subjects: Subjects, settings: GatewaySettings, *, pool: ToolPool | None = None,
                 http_client: httpx.AsyncClient | None = None, redactor: Redactor | None = None,
                 plan: StreamPlan = DEFAULT_PLAN) -> None:
        super().__init__("the mcp-gateway service")
        self._plan = plan
        self._redactor = redactor or Redactor()
        self._nc = nc
        self._subjects = subjects
        self._settings = settings
        self._pool = pool
        self._http_client = http_client

    @property
    def app_sessions(self) -> AppSessions:
        return self.require_started()

    async def run(self, stop: asyncio.Event) -> None:
        """Serve until `stop` is set (SIGTERM)."""
        self.require_started()
        await stop.wait()

    async def _start(self, parts: contextlib.AsyncExitStack) -> AppSessions:
        nc, subjects, settings = self._nc, self._subjects, self._settings
        js = nc.jetstream()
        await ensure_streams(js, [*fabric_streams(subjects), audit_stream(subjects)], plan=self._plan)
        health = await ensure_bucket(js, apps_bucket(subjects), plan=self._plan)
        approvals_kv = await ensure_bucket(js, approvals_bucket(subjects), plan=self._plan)
        users_kv = await ensure_bucket(js, users_bucket(subjects), plan=self._plan)
        policies_kv = await ensure_bucket(js, approval_policies_bucket(subjects), plan=self._plan)
        ledger_spec = call_ledger_bucket(subjects, settings.call_ledger_ttl_seconds)
        ledger = CallLedger(await ensure_bucket(js, ledger_spec, plan=self._plan),
                            heartbeat_seconds=settings.ledger_heartbeat_seconds)
        # Read only (the router writes them); created here too so that either may start first.
        custody = Custody(await ensure_bucket(js, run_records_bucket(subjects), plan=self._plan),
                          functools.partial(js.key_value, pipelines_bucket(subjects).name))
        pool = self._pool or ToolPool(js, subjects, plan=self._plan)
        redaction = GatewayRedaction(self._redactor, lambda: pool.tools, settings.secrets)
        redaction.learn_apps(settings.apps, settings.apps_env)
        parts.push_async_callback(pool.stop)
        await pool.start()
        redaction.learn_systems(pool.systems.values())
        acks = AckedPublisher(nc)
        parts.push_async_callback(acks.close)  # after the outboxes below have stopped
        signals: Outbox[SignalBase] = Outbox("signals", functools.partial(send_signal, acks, subjects))
        audit: Outbox[AuditItem] = Outbox("audit", audit_publisher(acks, subjects),
                                          send_now=audit_sender_now(acks, subjects))
        parts.push_async_callback(audit.stop)
        parts.push_async_callback(signals.stop)
        await signals.start()
        await audit.start()
        # Built before what reports through them, so every part gets them in its constructor.
        events = PlatformEvents(nc, subjects, signals, redaction)
        reporting = Reporting(signals, audit, redaction)
        catalog = ToolCatalog()
        registry = UserRegistry(users_kv)
        governance = Governance(registry, policies_kv, lambda: pool.tools)
        listener = SessionsListener(nc, subjects, health, signals, pool, catalog)
        calls_in_flight = CallsInFlight()
        server_requests = ServerRequests(calls_in_flight)
        gateway = AppSessions(nc, subjects, settings.apps, listener, server_requests, env=settings.apps_env)
        approvals = ApprovalStore(approvals_kv, ttl_seconds=settings.approval_ttl_seconds,
                                  on_expired=events.approval_expired, redact=redaction.arguments)
        metrics.observe_pending_approvals(lambda: approvals.pending)
        parts.push_async_callback(gateway.stop)
        await gateway.start()
        http_client = self._http_client or httpx.AsyncClient(timeout=httpx.Timeout(30.0))
        parts.push_async_callback(http_client.aclose)
        http = HttpSystems(http_client, lambda: pool.systems, events.system_event, secrets=redaction.read_secret)
        parts.push_async_callback(http.stop)
        await http.start()
        status = StatusViews(gateway.sessions, catalog, listener.catalog_errors, http)
        executable = Executability(lambda: pool.systems, gateway.sessions, catalog, http.circuit_open)
        handler = CallPipeline(
            pool, gateway.sessions, executable, approvals=approvals, apps=settings.apps, catalog=catalog,
            custody=custody, http=http, on_result=reporting.record_call,
            on_approval_requested=events.approval_requested, ledger=ledger, calls=calls_in_flight,
            governance=governance, authorize=registry.refusal,
        )
        elicit_answers = ElicitAnswers(nc, subjects)
        parts.push_async_callback(elicit_answers.stop)
        await elicit_answers.start()
        edge_relay = EdgeRelay(nc, subjects)
        server_requests.attach(elicitation=Elicitation(
            calls_in_flight, handler, elicit_answers, reporting.record_call, events.interaction_requested,
            timeout=settings.elicitation_timeout_seconds, edge=edge_relay),
            sampling=Sampling(nc, subjects, calls_in_flight, reporting.record_call, edge=edge_relay))
        # Stopped after the calls in flight finished (exit order is reversed): then none is left executing.
        parts.push_async_callback(ledger.stop)
        await ledger.start()
        in_flight = InFlight()
        parts.push_async_callback(in_flight.wait_idle, settings.shutdown_wait_seconds)
        calls = CallServer(handler, in_flight, redaction.reply)
        service = await add_service(
            nc, name="aurora-mcp-gateway", version=VERSION, description="MCP sessions, tool pool, tool calls"
        )
        parts.push_async_callback(service.stop)
        await add_inline_endpoint(service, name="tool-call", subject=subjects.tool_call, handler=calls.tool_call)
        await add_inline_endpoint(service, name="operator-tool-call", subject=subjects.operator_tool_call,
                                  handler=calls.operator_call)
        await add_inline_endpoint(service, name="edge-tool-call", subject=subjects.edge_tool_call,
                                  handler=calls.edge_call)
        # A person's operator calls: `….u.<name>`, checked against the users registry like any admin request.
        await add_inline_endpoint(service, name="operator-tool-call-person",
                                  subject=person_endpoint_subject(subjects.operator_tool_call),
                                  handler=calls.person_call)
        endpoints = admin_endpoints(
            sessions=gateway.sessions, catalog=catalog, status=status, events=events, reporting=reporting,
            apps=settings.apps, pool=pool, approvals=approvals, executable=executable,
            importer=OpenApiImporter(settings.openapi_limits), governance=governance, users=users_kv,
            policies=policies_kv, secrets=settings.secrets,
        )
        for (area, verb), endpoint in endpoints.items():
            await add_admin_endpoint(service, subjects, area, verb, endpoint, registry.refusal)
        halt = asyncio.Event()
        async def chat_decided(approval: Approval, verb: str) -> None:
            """A decision in the chat is on the audit too, as the chat user the bridge's event named."""
            asked = approval.asked_in_chat
            reporting.record_decision(approval, approval.decided_by or "the chat user", verb, approval.note,
                                      caller=f"chat:{asked.app}:{asked.actor_id}" if asked else "chat")
            await events.publish_approval_decision(approval, verb)

        answers = ChatAnswers(js, subjects, approvals, events_stream(subjects).name, chat_decided)
        background = [
            asyncio.create_task(sweep_expired_approvals(approvals, halt, settings.approval_sweep_seconds),
                                name="gateway-approval-sweeper"),
            asyncio.create_task(answers.run(halt), name="gateway-chat-answers"),
        ]
        parts.push_async_callback(_halt, halt, background)
        await write_through.flush(nc)  # "serving" means the endpoints' subscriptions reached the server
        log.info("serving", apps=len(gateway.sessions), tools=len(catalog.tools()))
        return gateway


async def _halt(halt: asyncio.Event, tasks: list[asyncio.Task[None]]) -> None:
    """Background loops stop at `halt`; one that already failed is logged, not raised again."""
    halt.set()
    for outcome in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(outcome, Exception):
            log.warning("a background task had failed", error=f"{type(outcome).__name__}: {outcome}")
