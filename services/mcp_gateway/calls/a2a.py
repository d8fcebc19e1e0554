"""The A2A executor as the pipeline calls it: the tool's system looked up, then the remote
agent's conversation (`services/mcp_gateway/a2a/executor.py`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from services.mcp_gateway.a2a.executor import A2ACalls
from services.mcp_gateway.calls import classify
from services.mcp_gateway.calls.caller import Caller
from services.mcp_gateway.calls.in_flight import CallsInFlight
from services.mcp_gateway.server_requests.callbacks import ServerRequests
from shared.contracts.system import AuthHeader, System
from shared.contracts.toolcall import ToolCallRequest, ToolCallResult
from shared.contracts.tooldef import A2AExecution, ToolDefinition


class A2AExecutor:
    def __init__(self, systems: Callable[[], Mapping[str, System]], calls: CallsInFlight,
                 asks: ServerRequests | None, secrets: Callable[[AuthHeader], str] | None) -> None:
        self._systems = systems
        self._calls = A2ACalls(calls, asks, secrets=secrets)

    async def execute(self, request: ToolCallRequest, tool: ToolDefinition, execution: A2AExecution,
                      call_id: str, caller: Caller | None) -> ToolCallResult:
        system = self._systems().get(tool.system)
        if system is None:
            return classify.failed("unavailable", "no_executor", f"system {tool.system!r} of {tool.name} is not "
                                   "registered", side_effect=tool.side_effect)
        # The call id is the idempotency key: the message's id, and in its metadata.
        return await self._calls.execute(system, tool, execution, dict(request.arguments), call_id=call_id,
                                         timeout=request.timeout_seconds, context=request.context, caller=caller)
