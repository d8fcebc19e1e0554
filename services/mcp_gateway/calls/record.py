"""What the gateway reports of each answered call: the audit record, the `tool.*` event of an
executed one, the call's metrics and span are all made from a `CallRecord`."""

from __future__ import annotations

from dataclasses import dataclass

from services.mcp_gateway.calls.caller import Caller
from shared.contracts.envelope import Trace
from shared.contracts.toolcall import ToolCallRequest, ToolCallResult
from shared.contracts.tooldef import ToolDefinition


@dataclass(frozen=True)
class CallRecord:
    request: ToolCallRequest
    tool: ToolDefinition | None
    result: ToolCallResult
    call_id: str
    executed: bool
    system: str | None = None  # where it ran (for platform tools: the source app)
    # Who called, as the endpoint and custody settled it; None: a record the gateway makes of its
    # own work for a call (a form asked, a model sampled), named by the call's agent.
    caller: Caller | None = None
    trace: Trace | None = None  # the caller's (the event's) trace, which the `tool.*` event continues

    @property
    def caller_name(self) -> str:
        """As the audit names the caller: `agent:<id>`, `person:<name>`, `operator`, `edge:<token>`,
        `run:<run id>`, `platform`, or `anonymous` (a claim nobody vouched for)."""
        if self.caller is not None:
            return self.caller.name
        agent = self.request.context.agent
        return f"agent:{agent}" if agent else "platform"
