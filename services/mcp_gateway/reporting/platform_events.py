"""Events the gateway produces itself: `system.*`, and `approval.*` (requested, granted, denied, expired).

Built before the parts that report them (the HTTP systems' circuits, the approval store, the
tool-call handler, the admin endpoints), so none of them needs the gateway to exist first.
"""

from __future__ import annotations

from typing import Any

from nats.aio.client import Client as NATS

from services.mcp_gateway.calls.redaction import GatewayRedaction
from services.mcp_gateway.reporting.outbox import Outbox
from shared.clock import now_iso
from shared.contracts.approval import Approval, decision_signal_id, public_view
from shared.contracts.signals import GATEWAY_APP, PlatformEventSignal, SignalBase
from shared.contracts.subjects import Subjects
from shared.nats.signal_publisher import new_signal_id, publish_signal


class PlatformEvents:
    def __init__(self, nc: NATS, subjects: Subjects, outbox: Outbox[SignalBase], redaction: GatewayRedaction) -> None:
        self._nc = nc
        self._subjects = subjects
        self._outbox = outbox
        self._redaction = redaction

    def platform_event(self, event_type: str, summary: str, data: dict[str, Any], *, session_id: str | None = None,
                       subject: tuple[str, str] | None = None) -> None:
        """`approval.*`, `system.*` … events, produced by the gateway itself."""
        self._outbox.put(platform_signal(new_signal_id(), event_type, summary, data, session_id, subject))

    def system_event(self, event_type: str, summary: str, data: dict[str, Any]) -> None:
        """An HTTP system's event (`system.circuit_*`), about the system its data names."""
        self.platform_event(event_type, summary, data, subject=("system", data["system"]))

    async def publish_platform_event(self, signal_id: str, event_type: str, summary: str, data: dict[str, Any], *,
                                     session_id: str | None = None, subject: tuple[str, str] | None = None) -> None:
        """The same, published before returning (JetStream acked it), under a signal id the
        caller chooses so that publishing it again is a no-op: for events that tasks wait on,
        which must not be lost with the outbox's memory if the gateway dies."""
        signal = platform_signal(signal_id, event_type, summary, data, session_id, subject)
        await publish_signal(self._nc.jetstream(), self._subjects, signal)

    async def publish_approval_decision(self, approval: Approval, verb: str) -> None:
        """`approval.granted` / `approval.denied`: a waiting task resumes (or is cancelled) on it,
        so it is published before the decision is answered, under an id of its own (deciding
        again publishes it again; the bridge keeps it once) that no app can predict and take first."""
        await self.publish_platform_event(
            decision_signal_id(approval, verb), f"approval.{verb}", f"{approval.tool} {verb} by {approval.decided_by}",
            self.approval_view(approval), session_id=approval.session_id, subject=("approval", approval.id))

    def approval_expired(self, approval: Approval) -> None:
        """Its waiting task is cancelled on this event; the id is the approval's own, so the
        bridge keeps one event however many times it is reported."""
        self._outbox.put(platform_signal(
            decision_signal_id(approval, "expired"), "approval.expired", f"approval for {approval.tool} expired",
            self.approval_view(approval), approval.session_id, ("approval", approval.id)))

    def interaction_requested(self, interaction_id: str, summary: str, data: dict[str, Any],
                              session_id: str | None) -> None:
        """An app's elicitation asked in a chat (`services.mcp_gateway.server_requests.elicitation`)."""
        self._outbox.put(platform_signal(f"interaction-{interaction_id}", "interaction.requested", summary, data,
                                         session_id, ("interaction", interaction_id)))

    def grant_recorded(self, approval: Approval, by: str) -> None:
        """One of the grants an approval needs (a `dangerous` tool's second approver is still to come)."""
        self.platform_event(
            "approval.grant_recorded", f"{approval.tool}: grant {len(approval.grants)} of "
            f"{approval.required_grants} by {by}", {**self.approval_view(approval), "by": by},
            session_id=approval.session_id, subject=("approval", approval.id))

    def decision_refused(self, approval: Approval, by: str, reason: str) -> None:
        """Someone the approval's policies do not allow tried to decide it."""
        self.platform_event(
            "approval.decision_refused", f"{by} may not decide the approval for {approval.tool}",
            {"id": approval.id, "tool": approval.tool, "task_id": approval.task_id, "by": by, "reason": reason,
             "code": "not_permitted"}, session_id=approval.session_id, subject=("approval", approval.id))

    def approval_requested(self, approval: Approval) -> None:
        self.platform_event(
            "approval.requested", f"{approval.tool} needs approval", self.approval_view(approval),
            session_id=approval.session_id, subject=("approval", approval.id))

    def approval_view(self, approval: Approval) -> dict[str, Any]:
        """An approval as its events carry it: its stored (already redacted) arguments redacted
        once more, as an approval stored before redaction existed may hold secrets."""
        view = public_view(approval)
        view["arguments"] = self._redaction.arguments(approval.tool, approval.arguments)
        return view


def platform_signal(signal_id: str, event_type: str, summary: str, data: dict[str, Any], session_id: str | None,
                    subject: tuple[str, str] | None) -> PlatformEventSignal:
    return PlatformEventSignal(
        signal_id=signal_id, app=GATEWAY_APP, observed_at=now_iso(), type=event_type, summary=summary, data=data,
        session_id=session_id, subject_kind=subject[0] if subject else None,
        subject_id=subject[1] if subject else None,
    )
