"""The admin status views: an app session's health (also what the apps bucket holds) and a
system as `aurora systems` shows it (settings, health, circuit)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from services.mcp_gateway.pool.live_catalog import ToolCatalog
from services.mcp_gateway.sessions.session import AppSession
from shared.clock import now_iso
from shared.contracts.health import SessionHealth
from shared.contracts.system import System


class HttpSystemStatus(Protocol):
    """Health and circuit of an HTTP system (`HttpSystems`)."""

    def status(self, system_name: str) -> dict[str, Any]: ...


def session_health(session: AppSession, catalog: ToolCatalog, catalog_errors: list[str]) -> SessionHealth:
    """A session's health; while connected, the tools its catalog refused are its last error."""
    app = session.app
    return SessionHealth(
        app=app.app_id,
        instance=app.instance,
        name=app.name,
        transport=app.mcp.transport,
        status=session.status,
        tools=catalog.count(session.key),
        server_name=session.server_info.name if session.server_info else None,
        server_version=session.server_info.version if session.server_info else None,
        protocol=session.protocol_version,
        last_error=(
            "; ".join([*catalog_errors, *([session.problem] if session.problem else [])]) or None
            if session.status == "connected" else session.last_error
        ),
        updated_at=now_iso(),
    )


class StatusViews:
    def __init__(self, sessions: Mapping[tuple[str, str], AppSession], catalog: ToolCatalog,
                 catalog_errors: Mapping[tuple[str, str], list[str]], http: HttpSystemStatus) -> None:
        self._sessions = sessions
        self._catalog = catalog
        self._catalog_errors = catalog_errors
        self._http = http

    def apps(self) -> list[SessionHealth]:
        return [self.health(session) for session in self._sessions.values()]

    def health(self, session: AppSession) -> SessionHealth:
        return session_health(session, self._catalog, self._catalog_errors.get(session.key) or [])

    def system_status(self, system: System, *, published: int = 0) -> dict[str, Any]:
        """A system as `aurora systems` shows it: settings, health, circuit and its tools (an
        app's: those its session offers now; an HTTP system's: the `published` ones)."""
        view: dict[str, Any] = {"name": system.name, "type": system.type, "enabled": system.enabled,
                                "base_url": system.base_url}
        if system.type == "mcp":
            sessions = [s for s in self._sessions.values() if s.app.app_id == system.name]
            view["health"] = sessions[0].status if sessions else "not_configured"
            view["last_error"] = sessions[0].last_error if sessions else None
            view["tools"] = len(self._catalog.tools(system.name))
        else:
            view.update(self._http.status(system.name))
            view["tools"] = published
        return view
