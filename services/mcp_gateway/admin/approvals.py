"""`approvals.*`: list, get, grant and deny approvals; a decision's event goes out before its answer.

The decider is the person the server authenticated (`current_caller()`: read off the subject),
never a name in the body; the approval's policies decide whether they may (`not_permitted`
otherwise, audited and announced as `approval.decision_refused`). A grant of an approval that
needs two people's grants is recorded (`approval.grant_recorded`) and the approval stays pending.
"""

from __future__ import annotations

from typing import Any

from services.mcp_gateway.admin.fields import Endpoints, text_field
from services.mcp_gateway.approvals.deciders import Governance
from services.mcp_gateway.approvals.store import ApprovalRefused, ApprovalStore
from services.mcp_gateway.reporting.platform_events import PlatformEvents
from services.mcp_gateway.reporting.reports import Reporting
from shared.contracts.approval import Approval
from shared.contracts.approval_policy import ApprovalPolicy
from shared.nats.admin_service import AdminHandler, AdminRequestError
from shared.people import current_caller


def approval_endpoints(approvals: ApprovalStore, events: PlatformEvents, governance: Governance,
                       reporting: Reporting) -> Endpoints:
    async def view(approval: Approval, policies: list[ApprovalPolicy] | None = None) -> dict[str, Any]:
        shown = events.approval_view(approval)
        rules = await governance.rules(approval.tool, approval.side_effect, policies=policies)
        shown["may_decide"] = {**rules.deciders(), "policies": list(rules.ids),
                               "chat_user": approval.asked_in_chat is not None,
                               "requester_may_approve": rules.requester_may_approve}
        return shown

    async def list_approvals(body: dict[str, Any]) -> list[dict[str, Any]]:
        state = body.get("state")
        policies = await governance.policies()  # once for the whole list
        return [await view(a, policies) for a in await approvals.find(state if isinstance(state, str) else None)]

    async def get(body: dict[str, Any]) -> dict[str, Any]:
        found = await approvals.get(text_field(body, "id"))
        if found is None:
            raise AdminRequestError("not_found", f"no approval {body['id']!r}")
        return await view(found[0])

    def decide(grant: bool) -> AdminHandler:
        verb = "granted" if grant else "denied"

        async def handler(body: dict[str, Any]) -> dict[str, Any]:
            approval_id = text_field(body, "id")
            caller = current_caller()  # a `by` in the body decides nothing
            note = body.get("note") if isinstance(body.get("note"), str) else None
            found = await approvals.get(approval_id)
            if found is None:
                raise AdminRequestError("approval_unknown", f"no approval {approval_id!r}")
            _, check = await governance.person_check(caller, found[0], granting=grant)
            try:
                approval = await approvals.decide(approval_id, grant=grant, by=caller.name, note=note, check=check)
            except ApprovalRefused as exc:
                if exc.code == "not_permitted" and exc.approval is not None:
                    reporting.record_decision(exc.approval, caller.name, "not_permitted", str(exc))
                    events.decision_refused(exc.approval, caller.name, str(exc))
                elif exc.approval is not None and exc.approval.state == verb:
                    # Decided so before: still refused, but its event goes out again, in case the
                    # gateway died between deciding and publishing (the bridge keeps it once).
                    await publish_decision(exc.approval, verb)
                raise AdminRequestError(exc.code, str(exc)) from exc
            if approval.state == "pending":  # one of the grants it needs
                reporting.record_decision(approval, caller.name, "grant_recorded", note)
                events.grant_recorded(approval, caller.name)
                return await view(approval)
            reporting.record_decision(approval, caller.name, verb, note)
            await publish_decision(approval, verb)
            return await view(approval)

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
