"""Whether a tool can run right now: its system enabled, its app connected, its circuit closed."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from services.mcp_gateway.pool.live_catalog import ToolCatalog
from services.mcp_gateway.sessions.session import AppSession
from shared.contracts.system import System
from shared.contracts.tooldef import McpExecution, ToolDefinition

# system name → why its circuit refuses calls now, or None when closed / half-open.
CircuitCheck = Callable[[str], str | None]


class Executability:
    def __init__(
        self,
        systems: Callable[[], Mapping[str, System]],
        sessions: Mapping[tuple[str, str], AppSession],
        catalog: ToolCatalog,
        circuit_open: CircuitCheck | None = None,
    ) -> None:
        self._systems = systems
        self._sessions = sessions
        self._catalog = catalog
        self._circuit_open = circuit_open or (lambda _system: None)

    def __call__(self, tool: ToolDefinition) -> tuple[str, str] | None:
        system = self._systems().get(tool.system)
        if system is None:
            return "system_unknown", f"system {tool.system!r} is not registered"
        if not system.enabled:
            return "system_disabled", f"system {system.name!r} is disabled"
        if isinstance(tool.execution, McpExecution):
            session = self._sessions.get((tool.execution.app, tool.execution.instance))
            if session is None:
                return "app_unavailable", f"app {tool.execution.app!r} is not configured in this gateway"
            if not session.connected:
                reason = f": {session.last_error}" if session.last_error else ""
                return "app_unavailable", f"app {session.app.name!r} is {session.status}{reason}"
            if self._catalog.get(tool.name) is None:
                return "tool_not_offered", f"app {session.app.name!r} no longer offers this tool"
            return None
        open_reason = self._circuit_open(system.name)
        if open_reason is not None:
            return "circuit_open", open_reason
        return None
