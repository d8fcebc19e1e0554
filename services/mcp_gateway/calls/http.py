"""The HTTP executor: a call of a `System`'s operation, through the gateway's HTTP systems."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from services.mcp_gateway.calls import classify
from services.mcp_gateway.systems.runtime import HttpSystems
from shared.contracts.system import System
from shared.contracts.toolcall import ToolCallRequest, ToolCallResult
from shared.contracts.tooldef import ToolDefinition


class HttpExecutor:
    """`runner`: the gateway's HTTP systems, which send each call through its system's circuit."""

    def __init__(self, systems: Callable[[], Mapping[str, System]], runner: HttpSystems | None) -> None:
        self._systems = systems
        self._runner = runner

    async def execute(self, request: ToolCallRequest, tool: ToolDefinition, call_id: str) -> ToolCallResult:
        system = self._systems().get(tool.system)
        if self._runner is None or system is None:
            return classify.failed(
                "unavailable", "no_executor", f"no HTTP executor for {tool.name}", side_effect=tool.side_effect
            )
        # The call id is the idempotency key: asked again under the same id, it is the same call.
        return await self._runner.execute(
            system, tool, dict(request.arguments), idempotency_key=call_id, timeout=request.timeout_seconds
        )
