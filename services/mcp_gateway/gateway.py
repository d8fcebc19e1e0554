"""The gateway: sessions for every app, the catalog they feed, and what it tells the others."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import mcp_types as types
import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js.kv import KeyValue

from services.mcp_gateway.catalog import (
    CatalogConflict,
    CatalogTool,
    ToolCatalog,
    check_no_conflicts,
    prefixed_name,
    side_effect_of_annotations,
)
from services.mcp_gateway.http_systems import HttpSystems
from services.mcp_gateway.observe import lifecycle_signal, notification_signal
from services.mcp_gateway.outbox import Outbox
from services.mcp_gateway.pool.audit import AuditItem
from services.mcp_gateway.pool.registry import ToolPool
from services.mcp_gateway.redaction import GatewayRedaction
from services.mcp_gateway.session import AppSession, TransportFactory
from services.mcp_gateway.toolcalls import CallRecord
from services.mcp_gateway.transports.http import http_transport
from services.mcp_gateway.transports.nats_stdio import nats_stdio_transport
from shared.appconfig import AppConfig, AppsConfig
from shared.bus import is_jetstream_delivery
from shared.clock import now_iso
from shared.contracts import mcp_relay
from shared.contracts.approval import Approval, decision_signal_id, public_view
from shared.contracts.audit import AuditRecord
from shared.contracts.health import SessionHealth, SessionStatus, session_key
from shared.contracts.signals import (
    GATEWAY_APP,
    LifecycleState,
    PlatformEventSignal,
    ResourceReadSignal,
    SignalBase,
    ToolOutcome,
    ToolResultSignal,
)
from shared.contracts.system import System
from shared.contracts.tooldef import McpExecution
from shared.logs import get_logger
from shared.redaction import Redactor
from shared.signal_publisher import new_signal_id, publish_signal
from shared.subjects import Subjects, app_token

log = get_logger("aurora.mcp_gateway")

_LIFECYCLE: dict[SessionStatus, LifecycleState] = {
    "connected": "connected",
    "disconnected": "disconnected",
    "unavailable": "init_failed",
}


class Gateway:
    """Implements the sessions' listener: health, signals, catalog updates."""

    def __init__(self, nc: NATS, subjects: Subjects, apps: AppsConfig, health: KeyValue, outbox: Outbox[SignalBase],
                 pool: ToolPool, audit: Outbox[AuditItem], *, redaction: GatewayRedaction | None = None) -> None:
        self._nc = nc
        # What the audit and the events keep of arguments, results and errors (secrets replaced).
        self.redaction = redaction or GatewayRedaction(Redactor(), lambda: pool.tools)
        self._pool = pool
        self._audit = audit
        self._subjects = subjects
        self._apps = apps
        self._health = health
        self._outbox = outbox
        self.catalog = ToolCatalog()
        self.sessions: dict[tuple[str, str], AppSession] = {}
        self._tools: dict[tuple[str, str], list[CatalogTool]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._subs: list[Subscription] = []
        self._stop = asyncio.Event()
        self.catalog_errors: dict[tuple[str, str], list[str]] = {}
        self.http_systems: HttpSystems | None = None

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        """Open every session and wait for each one's first attempt (bounded by its
        `health_timeout_seconds`); then the start-up catalog must have no conflicts."""
        for app in self._apps.enabled():
            session = AppSession(app, self._transport_for(app), self)
            self.sessions[session.key] = session
            if app.is_stdio:
                self._subs.append(
                    await self._nc.subscribe(
                        self._subjects.mcp(app.app_id, app.instance, "proc"), cb=self._on_process_event
                    )
                )
        for session in self.sessions.values():
            self._tasks.append(asyncio.create_task(session.run(self._stop), name=f"session-{session.app.name}"))
        await asyncio.gather(*(s.first_attempt_done.wait() for s in self.sessions.values()))
        try:
            check_no_conflicts({self.sessions[k].app.name: tools for k, tools in self._tools.items()})
        except CatalogConflict:
            await self.stop()  # announce `closed`: no supervisor should wait for these sessions
            raise

    async def stop(self) -> None:
        """Close every session (each announces `closed` to the supervisor)."""
        self._stop.set()
        for sub in self._subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
        if self._tasks:
            await asyncio.wait(self._tasks, timeout=15)
        for task in self._tasks:
            task.cancel()

    def _transport_for(self, app: AppConfig) -> TransportFactory:
        if app.mcp.transport == "streamable_http":
            assert app.mcp.url is not None
            url, headers = app.mcp.url, dict(app.mcp.headers)
            return lambda: http_transport(url, headers)
        return lambda: nats_stdio_transport(self._nc, self._subjects, app.app_id, app.instance)

    async def _on_process_event(self, msg: Msg) -> None:
        if is_jetstream_delivery(msg.reply):
            return
        try:
            event = mcp_relay.decode_process_event(msg.data)
        except msgspec.MsgspecError:
            log.warning("malformed process event", subject=msg.subject)
            return
        session = self.sessions.get((event.app, event.instance))
        if session is None:
            return
        if event.state == "started":
            session.process_started(event.generation)
        elif event.state in ("exited", "gave_up", "stopped"):
            reason = event.reason or f"the app process {event.state}" + (
                f" with code {event.exit_code}" if event.exit_code is not None else ""
            )
            session.process_exited(reason)

    # -- SessionListener -------------------------------------------------------------------
    async def session_state(self, session: AppSession, status: SessionStatus, reason: str | None) -> None:
        app = session.app
        if status in ("unavailable", "disconnected", "closed"):
            self.catalog.remove_app(session.key)
        await self._write_health(session)
        if status in _LIFECYCLE:
            self._outbox.put(
                lifecycle_signal(
                    app.app_id,
                    app.instance,
                    _LIFECYCLE[status],
                    reason,
                    {"transport": app.mcp.transport},
                )
            )
        if status in ("connected", "closed", "unavailable"):
            event = mcp_relay.SessionEvent(
                app=app.app_id, instance=app.instance, state=status, reason=reason, at=now_iso()
            )
            await self._nc.publish(self._subjects.mcp(app.app_id, app.instance, "sess"), mcp_relay.encode(event))
            if status == "closed":
                # Shielded: a cancelled flush leaves a PONG for a cancelled future, which kills
                # nats-py's read loop (see transports/nats_stdio.py).
                await asyncio.shield(self._nc.flush())

    async def tools_listed(self, session: AppSession, tools: list[types.Tool]) -> None:
        app = session.app
        entries = [_catalog_tool(app, tool) for tool in tools]
        self._tools[session.key] = entries
        refused = self.catalog.replace_app(session.key, entries)
        self.catalog_errors[session.key] = refused
        for reason in refused:
            log.error("tool refused", app=app.name, reason=reason)
        accepted = [t for t in entries if (owner := self.catalog.get(t.name)) and owner.app_key == session.key]
        try:
            await self._pool.sync_mcp_app(app, accepted, now_iso())
        except Exception as exc:  # the catalog still serves; the next listing syncs again
            log.error("tool definitions not synced", app=app.name, error=str(exc))
        if session.status == "connected":
            await self._write_health(session)

    async def notification(self, session: AppSession, method: str, params: dict[str, Any] | None) -> None:
        signal = notification_signal(session.app.app_id, session.app.instance, method, params)
        if signal is not None:
            self._outbox.put(signal)

    async def initialize_refused(self, session: AppSession, reason: str) -> None:
        """A stdio server that refuses a second `initialize` gets a fresh process."""
        await self._restart(session, reason)

    async def app_hung(self, session: AppSession, reason: str) -> None:
        """A stdio app that stopped answering while its process runs gets a fresh process."""
        await self._restart(session, reason)

    async def _restart(self, session: AppSession, reason: str) -> None:
        app = session.app
        if not app.is_stdio:
            return
        request = mcp_relay.RestartRequest(app=app.app_id, instance=app.instance, reason=reason)
        try:
            await self._nc.request(self._subjects.admin("supervisor", "restart"), mcp_relay.encode(request), timeout=5)
            log.info("asked the supervisor to restart the app", app=app.name, reason=reason)
        except Exception as exc:
            log.warning("could not ask for a restart", app=app.name, error=str(exc))

    async def record_call(self, record: CallRecord) -> None:
        """Every answered call is audited; every executed one also becomes a `tool.*` event."""
        result, ctx = record.result, record.request.context
        app_id = record.system or GATEWAY_APP
        hide = self.redaction
        error_message = hide.scrub(result.error.message) if result.error else None
        self._audit.put((app_id, AuditRecord(
            call_id=record.call_id, at=now_iso(), tool=record.request.tool, system=record.system,
            caller=f"agent:{ctx.agent}" if ctx.agent else "anonymous" if record.anonymous else "operator",
            agent=ctx.agent, run_id=ctx.run_id,
            task_id=ctx.task_id, session_id=ctx.session_id, actor=ctx.actor.id if ctx.actor else None,
            synthetic=ctx.synthetic, status=result.status,
            error_code=result.error.code if result.error else None,
            error_message=error_message, duration_ms=result.duration_ms,
            approval_id=result.approval_id, side_effect=result.side_effect,
            input_summary=hide.summary(record.request.arguments, hide.paths(record.request.tool)),
            output_summary=hide.summary(result.structured if result.structured is not None else result.content),
        )))
        if not record.executed or record.system is None:
            return
        outcome: ToolOutcome = (
            "succeeded" if result.status == "ok"
            else "timeout" if result.error is not None and result.error.code == "timeout" else "failed"
        )
        execution = record.tool.execution if record.tool is not None else None
        instance = execution.instance if isinstance(execution, McpExecution) else "default"
        self._outbox.put(ToolResultSignal(
            signal_id=new_signal_id(), app=record.system, instance=instance, observed_at=now_iso(),
            tool=record.request.tool, outcome=outcome, status=result.status, duration_ms=result.duration_ms,
            call_id=record.call_id, run_id=ctx.run_id, task_id=ctx.task_id, agent=ctx.agent,
            session_id=ctx.session_id, synthetic=ctx.synthetic,
            error={"code": result.error.code, "message": error_message or ""} if result.error else None,
            trace=record.trace,
        ))

    def platform_event(self, event_type: str, summary: str, data: dict[str, Any], *, session_id: str | None = None,
                       subject: tuple[str, str] | None = None) -> None:
        """`approval.*`, `system.*` … events, produced by the gateway itself."""
        self._outbox.put(_platform_signal(new_signal_id(), event_type, summary, data, session_id, subject))

    async def publish_platform_event(self, signal_id: str, event_type: str, summary: str, data: dict[str, Any], *,
                                     session_id: str | None = None, subject: tuple[str, str] | None = None) -> None:
        """The same, published before returning (JetStream acked it), under a signal id the
        caller chooses so that publishing it again is a no-op: for events that tasks wait on,
        which must not be lost with the outbox's memory if the gateway dies."""
        signal = _platform_signal(signal_id, event_type, summary, data, session_id, subject)
        await publish_signal(self._nc.jetstream(), self._subjects, signal)

    async def publish_approval_decision(self, approval: Approval, verb: str) -> None:
        """`approval.granted` / `approval.denied`: a waiting task resumes (or is cancelled) on it,
        so it is published before the decision is answered, under an id of its own (deciding
        again publishes it again; the bridge keeps it once) that no app can predict and take first."""
        await self.publish_platform_event(
            decision_signal_id(approval, verb), f"approval.{verb}", f"{approval.tool} {verb} by {approval.decided_by}",
            self.approval_view(approval), session_id=approval.session_id, subject=("approval", approval.id))

    def approval_expired(self, approval: Approval) -> None:
        """Its waiting task is cancelled on this event; the id is the approval's own, so the
        bridge keeps one event however many times it is reported."""
        self._outbox.put(_platform_signal(
            decision_signal_id(approval, "expired"), "approval.expired", f"approval for {approval.tool} expired",
            self.approval_view(approval), approval.session_id, ("approval", approval.id)))

    def approval_requested(self, approval: Approval) -> None:
        self.platform_event(
            "approval.requested", f"{approval.tool} needs approval", self.approval_view(approval),
            session_id=approval.session_id, subject=("approval", approval.id))

    def approval_view(self, approval: Approval) -> dict[str, Any]:
        """An approval as its events carry it: its stored (already redacted) arguments redacted
        once more, as an approval stored before redaction existed may hold secrets."""
        view = public_view(approval)
        view["arguments"] = self.redaction.arguments(approval.tool, approval.arguments)
        return view

    async def record_resource_read(self, session: AppSession, uri: str, contents: list[dict[str, Any]]) -> None:
        """Resource reads become `resource.read` events only when the app's config asks."""
        app = session.app
        if not app.mcp.publish_resource_reads:
            return
        first = contents[0] if contents else {}
        text = first.get("text") if isinstance(first.get("text"), str) else None
        self._outbox.put(
            ResourceReadSignal(
                signal_id=new_signal_id(),
                app=app.app_id,
                instance=app.instance,
                observed_at=now_iso(),
                uri=uri,
                mime_type=first.get("mimeType"),
                size=len(text) if text is not None else None,
                text=text[:4096] if text is not None else None,
            )
        )

    def app_config(self, app_id: str) -> AppConfig | None:
        return self._apps.get(app_id)

    def system_status(self, system: System) -> dict[str, Any]:
        """A system as `aurora systems` shows it: settings, health and circuit."""
        view: dict[str, Any] = {"name": system.name, "type": system.type, "enabled": system.enabled,
                                "base_url": system.base_url}
        if system.type == "mcp":
            sessions = [s for s in self.sessions.values() if s.app.app_id == system.name]
            view["health"] = sessions[0].status if sessions else "not_configured"
            view["last_error"] = sessions[0].last_error if sessions else None
            view["tools"] = len(self.catalog.tools(system.name))
        else:
            view.update(self.http_status(system.name))
        return view

    def http_status(self, system_name: str) -> dict[str, Any]:
        """Health and circuit of an HTTP system (set by the composition root)."""
        if self.http_systems is None:
            return {"health": "unknown", "circuit": "closed", "last_error": None}
        return self.http_systems.status(system_name)

    # -- views -----------------------------------------------------------------------------
    def health(self, session: AppSession) -> SessionHealth:
        app = session.app
        errors = self.catalog_errors.get(session.key) or []
        return SessionHealth(
            app=app.app_id,
            instance=app.instance,
            name=app.name,
            transport=app.mcp.transport,
            status=session.status,
            tools=self.catalog.count(session.key),
            server_name=session.server_info.name if session.server_info else None,
            server_version=session.server_info.version if session.server_info else None,
            last_error="; ".join(errors) if errors and session.status == "connected" else session.last_error,
            updated_at=now_iso(),
        )

    async def _write_health(self, session: AppSession) -> None:
        key = session_key(app_token(session.app.app_id), session.app.instance)
        try:
            await self._health.put(key, msgspec.json.encode(self.health(session)))
        except Exception as exc:
            log.warning("health write failed", app=session.app.name, error=str(exc))


def _catalog_tool(app: AppConfig, tool: types.Tool) -> CatalogTool:
    annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
    return CatalogTool(
        name=prefixed_name(app.app_id, tool.name),
        app_id=app.app_id,
        instance=app.instance,
        app_name=app.name,
        tool=tool.name,
        description=tool.description or "",
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
        annotations=annotations,
        side_effect=side_effect_of_annotations(annotations),
    )


def _platform_signal(signal_id: str, event_type: str, summary: str, data: dict[str, Any], session_id: str | None,
                     subject: tuple[str, str] | None) -> PlatformEventSignal:
    return PlatformEventSignal(
        signal_id=signal_id, app=GATEWAY_APP, observed_at=now_iso(), type=event_type, summary=summary, data=data,
        session_id=session_id, subject_kind=subject[0] if subject else None,
        subject_id=subject[1] if subject else None,
    )
