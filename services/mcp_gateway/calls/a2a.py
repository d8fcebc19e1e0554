"""The A2A executor as the pipeline calls it: the tool's system looked up, then the remote
agent's conversation (`services/mcp_gateway/a2a/executor.py`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from services.mcp_gateway.calls import classify
from services.mcp_gateway.calls.caller import Caller
from services.mcp_gateway.calls.in_flight import CallsInFlight
from services.mcp_gateway.server_requests.callbacks import ServerRequests
from shared.contracts.system import AuthHeader, System
from shared.contracts.toolcall import ToolCallRequest, ToolCallResult
from shared.contracts.tooldef import A2AExecution, ToolDefinition

if TYPE_CHECKING:
    from services.mcp_gateway.a2a.executor import A2ACalls


class A2AExecutor:
    def __init__(self, systems: Callable[[], Mapping[str, System]], calls: CallsInFlight,
                 asks: ServerRequests | None, secrets: Callable[[AuthHeader], str] | None) -> None:
        self._systems = systems
        self._parts = calls, asks, secrets
        self._a2a: A2ACalls | None = None

    def _calls(self) -> A2ACalls:
        """Made at the first A2A call: the A2A SDK is imported then (0.3–0.5 s of CPU that a
        gateway calling no remote agent, as most do, would spend at every start)."""
        if self._a2a is None:
            from services.mcp_gateway.a2a.executor import A2ACalls

            calls, asks, secrets = self._parts
            self._a2a = A2ACalls(calls, asks, secrets=secrets)
        return self._a2a

    async def execute(self, request: ToolCallRequest, tool: ToolDefinition, execution: A2AExecution,
                      call_id: str, caller: Caller | None) -> ToolCallResult:
        system = self._systems().get(tool.system)
        if system is None:
            return classify.failed("unavailable", "no_executor", f"system {tool.system!r} of {tool.name} is not "
                                   "registered", side_effect=tool.side_effect)
        # The call id is the idempotency key: the message's id, and in its metadata.
        return await self._calls().execute(system, tool, execution, dict(request.arguments), call_id=call_id,
                                           timeout=request.timeout_seconds, context=request.context, caller=caller)
