"""Admission, pure: caller × tool × policies → what happens to the call. No I/O: the pipeline
reads what these need (the agent, what can run now, the policies) and asks.

Two questions, in the pipeline's order:

1. `binding_refusal`: may this caller use this tool at all, now? A deprecated tool is refused to
   everyone; an agent (a run's, an edge token's) only uses tools bound to it and available
   (bound ∩ published ∩ executable); people and the operator may call any tool that can run,
   drafts included (to try them).
2. `approval_needed`: must a person grant this call first? Policies bind every caller alike:
   - an agent's (or an edge token's) write or dangerous call, always (the agent is not trusted);
   - a person's or the shared operator identity's call when an enabled ApprovalPolicy covers the
     tool, and a `dangerous` tool's call always (under the built-in default when none covers
     it); a plain write nobody's policy covers runs at once: the `operator` role is the right
     to call tools;
   - an agent-less run's calls (a pipeline's own `event_*` tools) and the gateway's own, never.
   The rules that apply (`Rules`) say how many grants, and whether the chat may decide.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.mcp_gateway.calls.caller import Caller
from shared.contracts.agent import Agent
from shared.contracts.approval_policy import Rules
from shared.contracts.toolcall import SideEffect

Blocked = tuple[str, str]  # (reason, detail): why a tool cannot run now, or why it is left out


@dataclass(frozen=True)
class Refusal:
    status: str  # denied | unavailable
    reason: str
    detail: str


@dataclass(frozen=True)
class Hold:
    """The call waits for an approval: this many different people's grants, under these policies."""

    required_grants: int
    policies: tuple[str, ...]
    chat: bool  # also asked in the chat the event came from


@dataclass(frozen=True)
class ToolState:
    """What binding needs of a pool tool: its lifecycle, and why it cannot run now (None: it can);
    `excluded`: why it is left out of the agent's available set (None: it is in it)."""

    name: str
    deprecated: bool
    blocked: Blocked | None
    excluded: Blocked | None = None


def binding_refusal(caller: Caller, tool: ToolState, agent: Agent | None) -> Refusal | None:
    if tool.deprecated:
        return Refusal("denied", "deprecated", f"{tool.name} is deprecated")
    if caller.agent is None:  # people and the operator may call any tool that can run
        if tool.blocked is None:
            return None
        return Refusal("denied" if tool.blocked[0] == "system_disabled" else "unavailable", *tool.blocked)
    if agent is None:
        return Refusal("denied", "unknown_agent", f"no agent {caller.agent!r}")
    if not agent.enabled:
        return Refusal("denied", "agent_disabled", f"agent {caller.agent!r} is disabled")
    if tool.name not in agent.tools:
        return Refusal("denied", "not_bound", f"{tool.name} is not bound to agent {caller.agent!r}")
    if tool.excluded is not None:
        # Left out because it cannot run right now (its app restarting, its circuit open):
        # nothing was sent, so the caller may wait and ask again. Anything else is a refusal.
        transient = (tool.blocked is not None and tool.blocked[0] == tool.excluded[0]
                     and tool.blocked[0] != "system_disabled")
        return Refusal("unavailable" if transient else "denied", *tool.excluded)
    return None


def approval_needed(caller: Caller, side_effect: SideEffect, rules: Rules | None, *, gated: bool = True,
                    chat_asked: bool = False, requester: str | None = None) -> Hold | None:
    """Whether this call waits for an approval, and which. `rules`: the policies matching the
    tool (None: not read, only an agent's or edge token's call goes without them); `gated`: a
    platform tool says whether it can be gated at all; `chat_asked`: the agent asks its chat
    user (`chat_approval: true`) and the event came from a chat; `requester`: the chat user."""
    if side_effect == "read" or not gated or not may_need_approval(caller, side_effect):
        return None
    if caller.human and side_effect != "dangerous" and (rules is None or not rules.matched):
        return None
    if rules is None:
        return Hold(1, (), chat=False)
    return Hold(rules.required_grants(side_effect), rules.ids,
                chat=chat_asked and rules.chat_delegated(requester))


def may_need_approval(caller: Caller, side_effect: SideEffect) -> bool:
    """Whether the policies need reading at all (a read, or an agent-less run's call, never waits)."""
    return side_effect != "read" and caller.kind in ("agent", "edge", "person", "operator")
