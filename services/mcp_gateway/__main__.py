"""Composition root of the MCP gateway: `python -m services.mcp_gateway`."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os

import httpx
from nats.aio.client import Client as NATS
from nats.micro import add_service
from nats.micro.request import Request

from services.mcp_gateway.admin import admin_endpoints
from services.mcp_gateway.chat_approvals import ChatAnswers
from services.mcp_gateway.gateway import Gateway
from services.mcp_gateway.http_systems import HttpSystems
from services.mcp_gateway.outbox import Outbox
from services.mcp_gateway.pool.approvals import ApprovalStore
from services.mcp_gateway.pool.audit import AuditItem, audit_publisher
from services.mcp_gateway.pool.executable import Executability
from services.mcp_gateway.pool.registry import ToolPool
from services.mcp_gateway.redaction import GatewayRedaction
from services.mcp_gateway.toolcalls import ToolCallHandler
from shared.admin import request_reply, wrap_handler
from shared.appconfig import load_apps_config
from shared.bus import is_jetstream_delivery
from shared.contracts.signals import SignalBase
from shared.logs import get_logger, scrub_logs_with
from shared.redaction import Redactor
from shared.service import run_service
from shared.settings import Settings
from shared.signal_publisher import publish_signal
from shared.streams import (
    approvals_bucket,
    apps_bucket,
    audit_stream,
    ensure_bucket,
    ensure_streams,
    events_stream,
    fabric_streams,
)

log = get_logger("aurora.mcp_gateway")


class InFlight:
    """Counts calls being served, so shutdown can let them finish (bounded)."""

    def __init__(self) -> None:
        self.count = 0
        self.tasks: set[asyncio.Task[None]] = set()
        self.idle = asyncio.Event()
        self.idle.set()

    def enter(self) -> None:
        self.count += 1
        self.idle.clear()

    def leave(self) -> None:
        self.count -= 1
        if self.count == 0:
            self.idle.set()

    def track(self, task: asyncio.Task[None]) -> None:
        # Keep a reference until the task is done (the loop holds only weak ones).
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


async def sweep_expired_approvals(approvals: ApprovalStore, stop: asyncio.Event, every: float) -> None:
    """Approvals nobody decided in time expire on their own; the store reports each one it
    expires (`approval.expired`), here or wherever a late decision or call found it first."""
    while not stop.is_set():
        try:
            await approvals.expire_due()
        except Exception as exc:
            log.warning("approval sweep failed", error=str(exc))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)


async def main(settings: Settings, nc: NATS, stop: asyncio.Event) -> None:
    apps = load_apps_config(settings.apps_config)
    js = nc.jetstream()
    subjects = settings.subjects
    await ensure_streams(js, [*fabric_streams(subjects), audit_stream(subjects)])
    health = await ensure_bucket(js, apps_bucket(subjects))
    pool = ToolPool(js, subjects)
    redaction = GatewayRedaction(Redactor(), lambda: pool.tools)
    redaction.learn_apps(apps)
    scrub_logs_with(redaction.redactor.scrub)
    approvals = ApprovalStore(
        await ensure_bucket(js, approvals_bucket(subjects)),
        ttl_seconds=float(os.environ.get("AURORA_APPROVAL_TTL_SECONDS", str(24 * 3600))),
        redact=redaction.arguments,
    )
    await pool.start()
    redaction.learn_systems(pool.systems.values())
    signals: Outbox[SignalBase] = Outbox("signals", functools.partial(publish_signal, js, subjects))
    audit: Outbox[AuditItem] = Outbox("audit", audit_publisher(js, subjects))
    signals.start()
    audit.start()
    gateway = Gateway(nc, subjects, apps, health, signals, pool, audit, redaction=redaction)
    approvals.on_expired = gateway.approval_expired
    await gateway.start()
    http_client = httpx.AsyncClient(timeout=httpx.Timeout(30.0))
    http = HttpSystems(
        http_client,
        lambda: pool.systems,
        lambda kind, summary, data: gateway.platform_event(kind, summary, data, subject=("system", data["system"])),
        secrets=redaction.read_secret,
    )
    gateway.http_systems = http
    await http.start()
    executable = Executability(lambda: pool.systems, gateway.sessions, gateway.catalog, http.circuit_open)
    handler = ToolCallHandler(
        pool,
        gateway.sessions,
        executable,
        approvals=approvals,
        apps=apps,
        catalog=gateway.catalog,
        http=http,
        on_result=gateway.record_call,
        on_approval_requested=gateway.approval_requested,
    )
    in_flight = InFlight()

    async def serve(request: Request, operator: bool) -> None:
        try:
            reply, record = await handler.answer(request.data, operator=operator)
            reply = redaction.reply(reply)  # no configured credential goes back to a caller
            try:
                await request.respond(reply)
                # `respond` only queues the reply for nats-py's flusher task; letting it run
                # first puts the reply on the wire before the audit record is built (0.1 ms).
                await asyncio.sleep(0)
            finally:  # audited even when the answer cannot be sent; the caller does not wait for it
                await handler.report(record)
        finally:
            in_flight.leave()

    async def tool_call(request: Request) -> None:
        if is_jetstream_delivery(request_reply(request)):
            return
        # nats-py runs a subscription's callback for one message at a time: each call gets its
        # own task, or one slow tool would hold up every other call.
        in_flight.enter()
        in_flight.track(asyncio.create_task(serve(request, False), name="tool-call"))

    async def operator_call(request: Request) -> None:
        if is_jetstream_delivery(request_reply(request)):
            return
        in_flight.enter()
        in_flight.track(asyncio.create_task(serve(request, True), name="operator-tool-call"))

    service = await add_service(
        nc, name="aurora-mcp-gateway", version="0.1.0", description="MCP sessions, tool pool, tool calls"
    )
    await service.add_endpoint(name="tool-call", subject=subjects.tool_call, handler=tool_call)
    await service.add_endpoint(name="operator-tool-call", subject=subjects.operator_tool_call, handler=operator_call)
    for (area, verb), endpoint in admin_endpoints(gateway, pool, approvals, executable).items():
        await service.add_endpoint(
            name=f"{area}-{verb}".replace("_", "-"),
            subject=subjects.admin(area, verb),
            handler=wrap_handler(verb, endpoint),
        )
    await nc.flush()  # "serving" means the endpoints' subscriptions reached the server
    log.info("serving", apps=len(gateway.sessions), tools=len(gateway.catalog.tools()))
    sweeper = asyncio.create_task(
        sweep_expired_approvals(approvals, stop, float(os.environ.get("AURORA_APPROVAL_SWEEP_SECONDS", "5"))),
        name="gateway-approval-sweeper",
    )
    answers = ChatAnswers(js, subjects, approvals, events_stream(subjects).name, gateway.publish_approval_decision)
    answering = asyncio.create_task(answers.run(stop), name="gateway-chat-answers")
    await stop.wait()
    await sweeper
    await answering

    # The seed's shutdown order: stop taking calls, let in-flight calls finish or time out,
    # close the MCP sessions (the supervisor stops app processes only after that).
    await service.stop()
    grace = float(os.environ.get("AURORA_SHUTDOWN_WAIT_SECONDS", "10"))
    try:
        await asyncio.wait_for(in_flight.idle.wait(), grace)
    except TimeoutError:
        log.warning("calls still in flight at shutdown", count=in_flight.count)
    await gateway.stop()
    await http.stop()
    await http_client.aclose()
    await signals.stop()
    await audit.stop()
    await pool.stop()


if __name__ == "__main__":
    run_service("mcp-gateway", main)
