"""One audit record per tool call, on `<p>.audit.<app>` in the audit stream.

The record of a call that reached its app or system (`executed`) is also the source of the
call's `tool.*` event: the event-bridge reads the audit stream and publishes it
(`services/event_bridge/tool_events.py`), so a call is reported with one message, not two.
"""

from __future__ import annotations

import msgspec

from shared.contracts.envelope import Trace


class AuditRecord(msgspec.Struct, frozen=True, kw_only=True):
    call_id: str
    at: str
    tool: str
    system: str | None
    # "operator", "person:<name>" (the person the server authenticated), "agent:<id>", "edge:<token id>"
    # (an mcp-edge client, by its bearer token), "run:<run id>" (an agent-less run, which the router
    # recorded), "platform" (the gateway's own call, e.g. a question asked in a chat), or "anonymous"
    # (a claim nobody vouched for: refused by custody, naming no agent). Approval decisions are audited too (status
    # `approval_<granted|denied|grant_recorded|not_permitted>`), and stream deliveries an endpoint refused, by the
    # service that refused them, as `delivery:<stream>/<consumer>` (shared/nats/refusal_audit.py).
    caller: str
    agent: str | None = None
    run_id: str | None = None
    task_id: str | None = None
    session_id: str | None = None
    actor: str | None = None
    synthetic: bool = False
    status: str
    error_code: str | None = None
    error_message: str | None = None
    duration_ms: float = 0.0
    approval_id: str | None = None
    side_effect: str | None = None
    input_summary: str = ""
    output_summary: str = ""
    # The call was sent to its app or system (absent in records written before tool events came
    # from the audit: those are not made events again).
    executed: bool = False
    instance: str | None = None  # the app instance that ran it
    sent_again: int = 0  # times sent again under its idempotency key after it was lost in flight (ToolCallResult's)
    trace: Trace | None = None  # the gateway's span for the call, which the `tool.*` event continues
