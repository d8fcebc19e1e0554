"""The `aurora-app-weather` MCP server: a fake forecast tool plus `aurora/event` emitters."""

from __future__ import annotations

from typing import Annotated, Any

import anyio
import anyio.abc
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.session import ServerSession
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from apps.common import event_params, send_event, send_notification

from .forecast import Forecast, Unit, describe, forecast_for

SERVER_NAME = "aurora-app-weather"


class WeatherApp:
    """Holds startup config, the MCPServer and (once initialized) the client session for background events."""

    def __init__(self, startup: dict[str, Any], task_group: anyio.abc.TaskGroup | None = None) -> None:
        self.default_city: str = str(startup.get("default_city") or "Paris")
        self.storm_cities = frozenset(str(c).strip().lower() for c in startup.get("storm_cities", []))
        self.announce_on_init = bool(startup.get("announce_on_init", False))
        self.alert_interval: float = float(startup.get("alert_interval_seconds", 0) or 0)
        self.task_group = task_group
        self.session: ServerSession | None = None
        self.server: MCPServer = MCPServer(
            SERVER_NAME,
            version="0.1.0",
            instructions="Fake, deterministic weather forecasts. Emits aurora/event weather.alert on storms.",
            log_level=str(startup.get("log_level", "INFO")).upper(),  # type: ignore[arg-type]
            middleware=[self._on_initialized],
        )
        self._register_tools()

    async def _on_initialized(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Middleware: once the client sends `notifications/initialized`, keep its session and start extras."""
        result = await call_next(ctx)
        if ctx.method == "notifications/initialized" and self.session is None:
            self.session = ctx.session
            if self.announce_on_init:
                summary = f"Weather station online (default city {self.default_city})"
                await send_event(
                    ctx.session,
                    event_params(
                        "weather.station.online", {"default_city": self.default_city}, summary=summary
                    ),
                )
            if self.alert_interval > 0 and self.task_group is not None:
                self.task_group.start_soon(self._periodic_alerts, ctx.session)
        return result

    async def _periodic_alerts(self, session: ServerSession) -> None:
        """Background task: the connection-level channel outlives any single request."""
        n = 0
        while True:
            await anyio.sleep(self.alert_interval)
            n += 1
            data = {"city": self.default_city, "sequence": n}
            await send_event(
                session,
                event_params("weather.alert", data, summary=f"Periodic alert #{n} for {self.default_city}"),
            )

    def _register_tools(self) -> None:
        mcp = self.server

        @mcp.tool(
            annotations=ToolAnnotations(title="Get weather", read_only_hint=True, open_world_hint=False)
        )
        async def get_weather(
            ctx: Context, city: str = "", unit: Unit = "celsius"
        ) -> Annotated[CallToolResult, Forecast]:
            """Current conditions and a 3-day forecast for `city` (empty: the app's default city)."""
            forecast = forecast_for(city.strip() or self.default_city, unit, self.storm_cities)
            if forecast.storm:
                data = {
                    "city": forecast.city,
                    "conditions": forecast.conditions,
                    "wind_kph": forecast.wind_kph,
                    "severity": "severe",
                }
                await send_event(
                    ctx.session,
                    event_params("weather.alert", data, summary=f"Storm warning for {forecast.city}"),
                )
            structured = forecast.model_dump(mode="json")
            return CallToolResult(
                content=[TextContent(type="text", text=describe(forecast))], structured_content=structured
            )

        @mcp.tool(
            annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
        )
        async def emit_event(
            ctx: Context,
            type: str,
            data: dict[str, Any],
            session_id: str | None = None,
            summary: str | None = None,
        ) -> dict[str, Any]:
            """Send an `aurora/event` notification with this payload (test helper)."""
            params = event_params(type, data, summary=summary, session_id=session_id)
            await send_event(ctx.session, params)
            return {"sent": True, "method": "aurora/event", "params": params}

        @mcp.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
        async def emit_notification(ctx: Context, method: str, params: dict[str, Any]) -> dict[str, Any]:
            """Send an arbitrary notification, e.g. `notifications/acme/ping` (test helper)."""
            await send_notification(ctx.session, method, params)
            return {"sent": True, "method": method, "params": params}
