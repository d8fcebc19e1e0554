"""Platform tools (`event_*`, `platform_*`): checked again at call time, then sent to the source
app's MCP tool the app declared for the capability. The agent may use this one, the event has
the target, the source app is still running and still capable; the approval, when one is
needed, is the pipeline's step between `prepare` and `send`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from services.mcp_gateway.calls import classify, targets
from services.mcp_gateway.calls.caller import Caller
from services.mcp_gateway.calls.ledger import Claim
from services.mcp_gateway.calls.mcp import McpExecutor
from services.mcp_gateway.calls.platform_tools import (
    PLATFORM_TOOLS,
    PlatformTool,
    app_arguments,
    missing_required,
    source_app_of,
)
from services.mcp_gateway.calls.platform_tools import check as check_platform
from services.mcp_gateway.calls.progress import sending
from services.mcp_gateway.pool.live_catalog import CatalogTool, ToolCatalog
from services.mcp_gateway.pool.registry import ToolPool
from shared.config.appconfig import AppConfig, AppsConfig
from shared.contracts.toolcall import ToolCallRequest, ToolCallResult


@dataclass(frozen=True)
class PlatformCall:
    """A platform tool's call, checked and mapped onto its app's tool."""

    spec: PlatformTool
    app: AppConfig
    app_tool: CatalogTool
    arguments: dict[str, Any]


class PlatformCalls:
    def __init__(self, pool: ToolPool, apps: AppsConfig, catalog: ToolCatalog, mcp: McpExecutor) -> None:
        self._pool = pool
        self._apps = apps
        self._catalog = catalog
        self._mcp = mcp

    async def prepare(self, request: ToolCallRequest, spec: PlatformTool) -> PlatformCall | ToolCallResult:
        ctx = request.context
        allowed: tuple[str, ...] = tuple(PLATFORM_TOOLS)  # people and the operator may use any of them
        if ctx.agent is not None:
            agent = await self._pool.agent(ctx.agent)
            if agent is None or not agent.enabled:
                return classify.failed("denied", "unknown_agent", f"no enabled agent {ctx.agent!r}")
            allowed = agent.allowed_platform_tools
        app_id = source_app_of(ctx.delivery)
        app = self._apps.get(app_id) if app_id else None
        refusal = check_platform(spec, delivery=ctx.delivery, app=app, allowed_platform_tools=allowed)
        if refusal is not None:
            return classify.failed("denied", refusal.reason, refusal.detail, side_effect=spec.side_effect)
        assert app is not None
        app_tool = self._catalog.get(f"{app.app_id}.{app.platform[spec.capability]}")
        if app_tool is None:
            return classify.failed("unavailable", "app_unavailable",
                                   f"app {app.name!r} does not offer {app.platform[spec.capability]!r} now",
                                   side_effect=spec.side_effect)
        arguments = app_arguments(spec, request.arguments, ctx.delivery, app_tool.input_schema)
        missing = missing_required(arguments, app_tool.input_schema)
        if missing:
            return classify.failed("denied", "adapter_api_unsupported",
                                   f"{app_tool.name} needs {', '.join(missing)}, which {spec.name} cannot supply",
                                   side_effect=spec.side_effect)
        return PlatformCall(spec, app, app_tool, arguments)

    async def send(self, request: ToolCallRequest, call: PlatformCall, claim: Claim | None = None,
                   caller: Caller | None = None) -> tuple[ToolCallResult, bool]:
        spec, app = call.spec, call.app
        # As for the app's own tools: the ledger's claim must not outlive the caller's patience.
        timeout = targets.call_timeout(request.timeout_seconds, app.mcp.call_timeout_seconds)
        if claim is not None:
            taken = await claim.take(side_effect=spec.side_effect, target=app.name, timeout=timeout,
                                     deduplicates=call.app_tool.tool in app.mcp.idempotency_key_tools)
            if taken is not None:
                return taken, False
        sending(request.tool, spec.side_effect)  # from here a failure may follow a call sent
        key = claim.call_id if claim is not None else None
        session = self._mcp.sessions.get(call.app_tool.app_key)
        result = await self._mcp.call_session(session, call.app_tool.tool, call.arguments, spec.side_effect,
                                              timeout, key, context=request.context, caller=caller)
        return result, True
