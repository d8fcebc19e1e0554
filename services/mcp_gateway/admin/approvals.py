"""`approvals.*`: list, get, grant and deny approvals; a decision's event goes out before its answer."""

from __future__ import annotations

from typing import Any

from services.mcp_gateway.admin.fields import Endpoints, text_field
from services.mcp_gateway.platform_events import PlatformEvents
from services.mcp_gateway.pool.approvals import ApprovalRefused, ApprovalStore
from shared.admin import AdminHandler, AdminRequestError
from shared.contracts.approval import Approval


def approval_endpoints(approvals: ApprovalStore, events: PlatformEvents) -> Endpoints:
    async def list_approvals(body: dict[str, Any]) -> list[dict[str, Any]]:
        state = body.get("state")
        return [events.approval_view(a) for a in await approvals.find(state if isinstance(state, str) else None)]

    async def get(body: dict[str, Any]) -> dict[str, Any]:
        found = await approvals.get(text_field(body, "id"))
        if found is None:
            raise AdminRequestError("not_found", f"no approval {body['id']!r}")
        return events.approval_view(found[0])

    def decide(grant: bool) -> AdminHandler:
        verb = "granted" if grant else "denied"

        async def handler(body: dict[str, Any]) -> dict[str, Any]:
            approval_id = text_field(body, "id")
            try:
                by = text_field(body, "by", required=False) or "operator"
                approval = await approvals.decide(approval_id, grant=grant, by=by, note=body.get("note"))
            except ApprovalRefused as exc:
                if exc.approval is not None and exc.approval.state == verb:
                    # Decided so before: still refused, but its event goes out again, in case the
                    # gateway died between deciding and publishing (the bridge keeps it once).
                    await publish_decision(exc.approval, verb)
                raise AdminRequestError(exc.code, str(exc)) from exc
            await publish_decision(approval, verb)
            return events.approval_view(approval)

        return handler

    async def publish_decision(approval: Approval, verb: str) -> None:
        try:
            await events.publish_approval_decision(approval, verb)
        except Exception as exc:
            raise AdminRequestError(
                "event_not_published",
                f"approval {approval.id} is {verb}, but its event could not be published ({exc}); "
                "run the same command again to publish it",
            ) from exc

    return {
        ("approvals", "list"): list_approvals,
        ("approvals", "get"): get,
        ("approvals", "grant"): decide(True),
        ("approvals", "deny"): decide(False),
    }
