"""`kind: ApprovalPolicy`: who may decide the approvals of which tools, and the rules a decision
must keep. Pure: the gateway reads the policies from its bucket and asks `decision_problem`.

Every policy that matches an approval's tool (by tool name or system pattern, and side effect)
applies, and a decider must satisfy all of them (the strictest wins); with none, the built-in
default applies: role `approver`, the requester may not approve their own request, one grant.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, model_validator

from shared.contracts.people import ACTOR_PATTERN, NAME_PATTERN, ROLES, Role
from shared.contracts.resource import ResourceId, ResourceModel

Pattern = Annotated[str, Field(min_length=1, max_length=256)]
GatedEffect = Literal["write", "dangerous"]


class ApprovalPolicy(ResourceModel):
    kind: Literal["ApprovalPolicy"] = "ApprovalPolicy"
    id: ResourceId
    description: Annotated[str, Field(max_length=2000)] = ""
    tools: tuple[Pattern, ...] = ()  # tool names, `*` patterns (`im.polaris.qq.*`); empty: any
    systems: tuple[Pattern, ...] = ()  # the tool's system or app id, patterns; empty: any
    side_effects: tuple[GatedEffect, ...] = ("write", "dangerous")
    roles: tuple[Role, ...] = ()  # people with one of these roles may decide
    users: tuple[Annotated[str, Field(pattern=NAME_PATTERN.pattern)], ...] = ()  # and these people
    # Let the user who caused the event decide in the chat (the agent's `chat_approval: true` is the
    # shorthand for this when no policy matches); `chat_users` narrows it to these app actors. That
    # user is the requester by definition: `requester_may_approve` is about people at the CLI.
    delegate_to_chat_user: bool = False
    chat_users: tuple[Annotated[str, Field(pattern=ACTOR_PATTERN.pattern)], ...] = ()
    requester_may_approve: bool = False
    dangerous_needs_two: bool = True  # a `dangerous` tool's call needs two different people's grants
    enabled: bool = True

    @model_validator(mode="after")
    def _someone_decides(self) -> ApprovalPolicy:
        if not self.roles and not self.users and not self.delegate_to_chat_user:
            raise ValueError("say who may decide: roles, users, or delegate_to_chat_user: true")
        if self.chat_users and not self.delegate_to_chat_user:
            raise ValueError("chat_users only narrow delegate_to_chat_user: set it true, or drop chat_users")
        return self

    def applies_to(self, tool: str, system: str | None, side_effect: str) -> bool:
        return (self.enabled and side_effect in self.side_effects
                and (not self.tools or any(fnmatch.fnmatchcase(tool, p) for p in self.tools))
                and (not self.systems or (system is not None
                                          and any(fnmatch.fnmatchcase(system, p) for p in self.systems))))


DEFAULT_POLICY = ApprovalPolicy(id="default", description="no ApprovalPolicy matches: approvers decide",
                                roles=("approver",), dangerous_needs_two=False)


@dataclass(frozen=True)
class Rules:
    """What every policy matching one approval requires together. `matched`: an ApprovalPolicy
    of the installation covers the tool (False: the built-in default stands in)."""

    policies: tuple[ApprovalPolicy, ...]
    matched: bool = True

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.policies)

    def required_grants(self, side_effect: str) -> int:
        return 2 if side_effect == "dangerous" and any(p.dangerous_needs_two for p in self.policies) else 1

    def chat_delegated(self, actor: str | None) -> bool:
        """Whether the user who caused the event (`<app>:<actor id>`) may decide in the chat."""
        return actor is not None and all(
            p.delegate_to_chat_user and (not p.chat_users or actor in p.chat_users) for p in self.policies)

    def person_may_decide(self, name: str, roles: Iterable[str]) -> bool:
        held = set(roles)
        return all(name in p.users or bool(held & set(p.roles)) for p in self.policies)

    @property
    def requester_may_approve(self) -> bool:
        return all(p.requester_may_approve for p in self.policies)

    def deciders(self) -> dict[str, list[str]]:
        """Who may decide, as `aurora approvals` shows it."""
        roles = [r for r in ROLES if all(r in p.roles for p in self.policies)]
        users = sorted(set.intersection(*(set(p.users) for p in self.policies))) if self.policies else []
        return {"roles": roles, "users": users}


def rules_for(policies: Iterable[ApprovalPolicy], tool: str, system: str | None, side_effect: str, *,
              chat_shorthand: bool = False) -> Rules:
    """The policies that apply to one approval; none matching: the default, or, when the agent says
    `chat_approval: true`, the default plus delegation to the event's chat user."""
    matching = tuple(p for p in policies if p.applies_to(tool, system, side_effect))
    if matching:
        return Rules(matching)
    if chat_shorthand:
        return Rules((DEFAULT_POLICY.model_copy(update={"delegate_to_chat_user": True, "id": "agent-chat-approval"}),),
                     matched=False)
    return Rules((DEFAULT_POLICY,), matched=False)


def person_problem(rules: Rules, *, name: str, roles: Iterable[str], actors: Iterable[str], requester: str | None,
                   grants_by: Iterable[str], granting: bool, required_grants: int = 1,
                   shared_identity: bool = False) -> str | None:
    """Why this person may not make this decision (None: they may). `shared_identity`: the
    installation's `operator` identity, which any holder of its credentials uses: it is nobody in
    particular, so it is never one of the two people four eyes need, and never vouches for a
    call a person or the operator made (whoever made it may hold its credentials too)."""
    if shared_identity and granting and required_grants > 1:
        return (f"{name} is the installation's shared identity, not a person: it cannot be one of the "
                f"{required_grants} different people this approval needs; approvers grant it with their own "
                "credentials")
    if shared_identity and granting and requester is not None and is_human_requester(requester):
        return (f"{name} is the installation's shared identity, not a person: it cannot grant a call a person or "
                f"the operator made ({requester}); an approver grants it with their own credentials")
    if not rules.person_may_decide(name, roles):
        who = rules.deciders()
        return (f"{name} may not decide this approval: policy {', '.join(rules.ids)} lets roles "
                f"{who['roles'] or '-'} and users {who['users'] or '-'} decide")
    if requester is not None and not rules.requester_may_approve and (requester in set(actors) or requester == name):
        return f"{name} requested this call (as {requester}) and may not decide it"
    if granting and name in set(grants_by):
        return f"{name} has already granted this approval; a second grant must come from someone else"
    return None


def is_human_requester(requester: str) -> bool:
    """A person's name or the shared `operator` identity, as a call at the CLI requests an approval;
    a chat user is `<app>:<actor id>`, an agent's run names no requester."""
    return ":" not in requester
