"""What the gateway does when an app session changes: the catalog and the apps bucket follow
it, lifecycle and notification signals go out, the supervisor hears `connected`/`closed`, and a
stdio app that refuses or hangs is restarted. Also the supervisor's process events, which end
or renew a session's connection attempt."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping
from typing import Any

import mcp_types as types
import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.js.kv import KeyValue

from services.mcp_gateway.pool.live_catalog import CatalogTool, ToolCatalog, prefixed_name, side_effect_of_annotations
from services.mcp_gateway.pool.registry import ToolPool
from services.mcp_gateway.reporting.outbox import Outbox
from services.mcp_gateway.sessions.observe import lifecycle_signal, notification_signal
from services.mcp_gateway.sessions.session import AppSession
from services.mcp_gateway.sessions.status import session_health
from shared.clock import now_iso
from shared.config.appconfig import AppConfig
from shared.contracts import mcp_relay
from shared.contracts.health import SessionStatus, session_key
from shared.contracts.signals import LifecycleState, SignalBase
from shared.contracts.subjects import Subjects, app_token
from shared.nats import write_through
from shared.nats.bus import RECEIPT_HEADER, is_jetstream_delivery
from shared.observability import tracing
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway")

_LIFECYCLE: dict[SessionStatus, LifecycleState] = {
    "connected": "connected",
    "disconnected": "disconnected",
    "unavailable": "init_failed",
}


class SessionsListener:
    """Implements every session's `SessionListener`."""

    def __init__(self, nc: NATS, subjects: Subjects, health: KeyValue, outbox: Outbox[SignalBase], pool: ToolPool,
                 catalog: ToolCatalog) -> None:
        self._nc = nc
        self._subjects = subjects
        self._health = health
        self._outbox = outbox
        self._pool = pool
        self._catalog = catalog
        # Each session's last listing as it came (the start-up conflict check reads it) and
        # the tools of it the catalog refused (the session's health says why).
        self.listed: dict[tuple[str, str], list[CatalogTool]] = {}
        self.catalog_errors: dict[tuple[str, str], list[str]] = {}

    async def session_state(self, session: AppSession, status: SessionStatus, reason: str | None) -> None:
        app = session.app
        if status in ("unavailable", "disconnected", "closed"):
            self._catalog.remove_app(session.key)
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
                await asyncio.shield(write_through.flush(self._nc))

    async def tools_listed(self, session: AppSession, tools: list[types.Tool]) -> None:
        app = session.app
        entries = [catalog_tool(app, tool) for tool in tools]
        self.listed[session.key] = entries
        refused = self._catalog.replace_app(session.key, entries)
        self.catalog_errors[session.key] = refused
        for reason in refused:
            log.error("tool refused", app=app.name, reason=reason)
        accepted = [t for t in entries if (owner := self._catalog.get(t.name)) and owner.app_key == session.key]
        try:
            await self._pool.sync_mcp_app(app, accepted, now_iso())
        except Exception as exc:  # the catalog still serves; the next listing syncs again
            log.error("tool definitions not synced", app=app.name, error=str(exc))
        if session.status == "connected":
            await self._write_health(session)

    async def notification(self, session: AppSession, method: str, params: dict[str, Any] | None,
                           receipt: str | None = None) -> None:
        """`receipt`: the supervisor waits for this event to be confirmed stored (its token)."""
        app = session.app
        signal = notification_signal(app.app_id, app.instance, method, params, receipt)
        confirm = None if receipt is None else functools.partial(self._confirm, app.app_id, app.instance, receipt)
        if signal is None:
            if confirm is not None:  # nothing to store: the supervisor need not send it again
                confirm()
            return
        # Where an app's event enters the platform: the first span of the trace it starts.
        with tracing.handling(f"{method} {session.app.app_id}", None, attributes={
                "mcp.method.name": method, "aurora.app": session.app.app_id,
                "aurora.app.instance": session.app.instance, "aurora.signal.id": signal.signal_id}) as span:
            if span.trace is not None:
                signal = msgspec.structs.replace(signal, trace=span.trace)
        self._outbox.put(signal, confirm)

    def _confirm(self, app_id: str, instance: str, receipt: str) -> None:
        """Tell the app's supervisor its event is stored: an empty message with the token on
        `….rcpt`. Lost, the event comes again and is confirmed again."""
        confirming = asyncio.ensure_future(write_through.publish(
            self._nc, self._subjects.mcp(app_id, instance, "rcpt"), headers={RECEIPT_HEADER: receipt}))
        confirming.add_done_callback(_quietly)

    async def session_problem(self, session: AppSession) -> None:
        await self._write_health(session)

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

    async def _write_health(self, session: AppSession) -> None:
        key = session_key(app_token(session.app.app_id), session.app.instance)
        health = session_health(session, self._catalog, self.catalog_errors.get(session.key) or [])
        try:
            await self._health.put(key, msgspec.json.encode(health))
        except Exception as exc:
            log.warning("health write failed", app=session.app.name, error=str(exc))


async def on_process_event(sessions: Mapping[tuple[str, str], AppSession], msg: Msg) -> None:
    """The supervisor says an app's process started (a new connection attempt may begin) or
    ended (the session's attempt is lost at once, not at its next call's timeout)."""
    if is_jetstream_delivery(msg.reply):
        return
    try:
        event = mcp_relay.decode_process_event(msg.data)
    except msgspec.MsgspecError:
        log.warning("malformed process event", subject=msg.subject)
        return
    session = sessions.get((event.app, event.instance))
    if session is None:
        return
    if event.state == "started":
        session.process_started(event.generation)
    elif event.state in ("exited", "gave_up", "stopped"):
        reason = event.reason or f"the app process {event.state}" + (
            f" with code {event.exit_code}" if event.exit_code is not None else ""
        )
        session.process_exited(reason)


def catalog_tool(app: AppConfig, tool: types.Tool) -> CatalogTool:
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


def _quietly(done: asyncio.Future[None]) -> None:
    """A confirmation that could not be written: the supervisor sends the event again."""
    if not done.cancelled() and done.exception() is not None:
        log.debug("event confirmation not sent", error=str(done.exception()))
