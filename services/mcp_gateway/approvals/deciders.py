"""Who may decide an approval: the ApprovalPolicy documents in the gateway's bucket, the people in
the users registry, and the decider the server authenticated (`shared.people.Caller`).

The rules themselves are pure (`shared.contracts.approval_policy`); this module reads what they
need and says, for one decision, why it may not be made.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import msgspec
from nats.js.kv import KeyValue

from shared.contracts.approval import Approval
from shared.contracts.approval_policy import ApprovalPolicy, Rules, person_problem, rules_for
from shared.contracts.resource import ResourceError, parse_resource
from shared.contracts.tooldef import ToolDefinition
from shared.jetstream.kvmirror import read_all
from shared.observability.logs import get_logger
from shared.people import Caller, UserRegistry

log = get_logger("aurora.mcp_gateway.governance")
Check = Callable[[Approval], str | None]


def actor_key(app: str | None, actor_id: str | None) -> str | None:
    """How a chat user is named in policies and user records: `<app id>:<actor id>`."""
    return f"{app}:{actor_id}" if app and actor_id else None


class Governance:
    def __init__(self, users: UserRegistry, policies: KeyValue, tools: Callable[[], Mapping[str, ToolDefinition]]):
        self.users = users
        self._policies = policies
        self._tools = tools

    async def policies(self) -> list[ApprovalPolicy]:
        found: list[ApprovalPolicy] = []
        for key, value in sorted((await read_all(self._policies)).items()):
            try:
                found.append(parse_resource(ApprovalPolicy, msgspec.json.decode(value)))
            except (ResourceError, msgspec.DecodeError) as exc:  # stored by an older gateway: said, not fatal
                log.warning("an approval policy cannot be read; it is ignored", policy=key, error=str(exc))
        return found

    def system_of(self, tool: str, fallback: str | None = None) -> str | None:
        found = self._tools().get(tool)
        return found.system if found is not None else fallback

    async def rules(self, tool: str, side_effect: str, *, system: str | None = None,
                    chat_shorthand: bool = False, policies: list[ApprovalPolicy] | None = None) -> Rules:
        """Read from the bucket each time (an approval asked a moment after a policy was applied
        follows it); `policies` for a caller that read them once for many approvals."""
        return rules_for(await self.policies() if policies is None else policies, tool,
                         self.system_of(tool, system), side_effect, chat_shorthand=chat_shorthand)

    async def person_check(self, caller: Caller, approval: Approval, *, granting: bool) -> tuple[Rules, Check]:
        """The rules for `approval` and the check `ApprovalStore.decide` applies to it as it stands."""
        rules = await self.rules(approval.tool, approval.side_effect)
        user, roles = await self.users.roles_of(caller)
        if caller.person is not None and (user is None or not user.active):
            reason = f"{caller.person} is {'disabled' if user is not None else 'not in the users registry'}"
            return rules, lambda _: reason
        actors = user.actors if user is not None else ()

        def check(current: Approval) -> str | None:
            return person_problem(rules, name=caller.name, roles=roles, actors=actors,
                                  requester=current.requested_by, grants_by=[g.by for g in current.grants],
                                  granting=granting, required_grants=current.required_grants,
                                  shared_identity=caller.person is None)

        return rules, check
