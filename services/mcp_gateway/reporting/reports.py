"""What the gateway reports of the work it does: an audit record for every answered call (the
event-bridge makes the `tool.*` event of an executed one from it), and `resource.read` events
when an app's config asks."""

from __future__ import annotations

from typing import Any

from services.mcp_gateway.calls.record import CallRecord
from services.mcp_gateway.calls.redaction import GatewayRedaction
from services.mcp_gateway.pool.audit import AuditItem
from services.mcp_gateway.reporting.outbox import Outbox
from services.mcp_gateway.sessions.session import AppSession
from shared.clock import now_iso
from shared.contracts.approval import Approval
from shared.contracts.audit import AuditRecord
from shared.contracts.signals import GATEWAY_APP, ResourceReadSignal, SignalBase
from shared.contracts.tooldef import McpExecution
from shared.nats.signal_publisher import new_signal_id
from shared.people import OPERATOR_IDENTITY


class Reporting:
    def __init__(self, signals: Outbox[SignalBase], audit: Outbox[AuditItem], redaction: GatewayRedaction) -> None:
        self._outbox = signals
        self._audit = audit
        # What the audit and the events keep of arguments, results and errors (secrets replaced).
        self._redaction = redaction

    async def record_call(self, record: CallRecord) -> None:
        """Every answered call is audited; the record of an executed one is also what the
        event-bridge makes its `tool.*` event from (one message per call, not two)."""
        result, ctx = record.result, record.request.context
        app_id = record.system or GATEWAY_APP
        hide = self._redaction
        error_message = hide.scrub(result.error.message) if result.error else None
        executed = record.executed and record.system is not None
        execution = record.tool.execution if record.tool is not None else None
        self._audit.put((app_id, AuditRecord(
            call_id=record.call_id, at=now_iso(), tool=record.request.tool, system=record.system,
            caller=record.caller_name,
            agent=ctx.agent, run_id=ctx.run_id,
            task_id=ctx.task_id, session_id=ctx.session_id, actor=ctx.actor.id if ctx.actor else None,
            synthetic=ctx.synthetic, status=result.status,
            error_code=result.error.code if result.error else None,
            error_message=error_message, duration_ms=result.duration_ms,
            approval_id=result.approval_id, side_effect=result.side_effect,
            input_summary=hide.summary(record.request.arguments, hide.paths(record.request.tool)),
            output_summary=hide.summary(result.structured if result.structured is not None else result.content),
            executed=executed,
            instance=(execution.instance if isinstance(execution, McpExecution) else "default") if executed else None,
            sent_again=result.sent_again,
            trace=record.trace if executed else None,
        )))

    def record_decision(self, approval: Approval, by: str, outcome: str, detail: str | None, *,
                        caller: str | None = None) -> None:
        """Every decision on an approval, and every refused attempt, on the audit, naming the
        person the server authenticated (`caller`: `person:<name>`, or `operator`)."""
        self._audit.put((GATEWAY_APP, AuditRecord(
            call_id=f"{approval.id}-decision-{new_signal_id()}", at=now_iso(), tool=approval.tool, system=None,
            caller=caller or (by if by == OPERATOR_IDENTITY else f"person:{by}"), agent=approval.agent,
            run_id=approval.run_id, task_id=approval.task_id, session_id=approval.session_id,
            status=f"approval_{outcome}", error_code="not_permitted" if outcome == "not_permitted" else None,
            error_message=self._redaction.scrub(detail) if detail and outcome == "not_permitted" else None,
            approval_id=approval.id, side_effect=approval.side_effect,
            input_summary=f"decided by {by}" + (f": {self._redaction.scrub(detail)}" if detail else ""),
        )))

    async def record_resource_read(self, session: AppSession, uri: str, contents: list[dict[str, Any]]) -> None:
        """Resource reads become `resource.read` events only when the app's config asks."""
        app = session.app
        if not app.mcp.publish_resource_reads:
            return
        first = contents[0] if contents else {}
        text = first.get("text") if isinstance(first.get("text"), str) else None
        self._outbox.put(
            ResourceReadSignal(
                signal_id=new_signal_id(),
                app=app.app_id,
                instance=app.instance,
                observed_at=now_iso(),
                uri=uri,
                mime_type=first.get("mimeType"),
                size=len(text) if text is not None else None,
                text=text[:4096] if text is not None else None,
            )
        )
