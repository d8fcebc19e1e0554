"""Who a tool call is from, settled at the edge of the gateway before anything else is looked at.

The endpoint a call came in on, and for a run the router's record of it, decide the caller;
nothing in the call's body does (a runner's credential is not trusted to say which agent it is,
and nobody can put another person's name on a call):

- `tool-call` (`<p>.tool.call`): a run. Custody reads the run's record (`custody`): the caller
  is the record's agent, or an agent-less run (a pipeline's own `event_*` calls).
- `operator-tool-call` (`<p>.admin.tools.call`): the installation's shared `operator` identity;
  nats-server lets no person publish there.
- `operator-tool-call-person` (`….u.<name>`): person `<name>`; only they may publish there, and
  the users registry must still give them the right to call tools.
- `edge-tool-call`: mcp-edge's external client, by its bearer token, for the token's agent.
- `platform`: the gateway's own calls (a question asked in a chat for an approval or a form).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Literal

import msgspec

from services.mcp_gateway.calls.custody import Custody, CustodyRefusal
from services.mcp_gateway.calls.platform_tools import PLATFORM_TOOLS
from shared.contracts.toolcall import ToolCallRequest
from shared.people import OPERATOR_IDENTITY
from shared.people import Caller as AdminCaller

CallerKind = Literal["agent", "run", "person", "operator", "edge", "platform", "unverified"]
EDGE_TOKEN_PREFIX = "token:"  # mcp-edge names its caller `token:<token id>` (kind `api`)
# A person's roles, as the users registry has them: why they may not call tools (None: they may).
Authorize = Callable[[AdminCaller, str, str], Awaitable[str | None]]


class Endpoint(Enum):
    TOOL_CALL = "tool-call"
    OPERATOR = "operator-tool-call"
    PERSON = "operator-tool-call-person"
    EDGE = "edge-tool-call"


@dataclass(frozen=True)
class Caller:
    """One call's caller. `agent` is the agent it acts as (a run's, an edge token's); `person`
    the authenticated person; `token` an edge token's id. `unverified`: custody refused the
    call, so only what it claimed is known (kept for the audit, trusted for nothing)."""

    kind: CallerKind
    agent: str | None = None
    run_id: str | None = None
    person: str | None = None
    token: str | None = None

    @property
    def human(self) -> bool:
        """A person at the CLI, or the shared operator identity: no run, no agent."""
        return self.kind in ("person", "operator")

    @property
    def name(self) -> str:
        """As approvals name who requested a call (`requested_by`) and the audit names the caller."""
        if self.kind == "person":
            return f"person:{self.person}"
        if self.kind == "operator":
            return OPERATOR_IDENTITY
        if self.kind == "edge":
            return f"edge:{self.token}"
        if self.kind == "run":
            return f"run:{self.run_id}"
        if self.kind == "platform":
            return "platform"
        return f"agent:{self.agent}" if self.agent else "anonymous"  # an agent, or a claim custody refused

    @property
    def requester(self) -> str:
        """`requested_by` of an approval this caller's call asks for: the person's own name (as
        approvals name deciders), so that they cannot grant their own request."""
        return self.person if self.kind == "person" and self.person else self.name


PLATFORM = Caller("platform")
OPERATOR = Caller("operator")


@dataclass(frozen=True)
class Refused:
    status: str  # denied | unavailable
    reason: str
    detail: str
    caller: Caller  # as far as it is known: the audit names it


async def caller_of(endpoint: Endpoint, subject: str, request: ToolCallRequest, custody: Custody,
                    authorize: Authorize | None) -> tuple[Caller, ToolCallRequest] | Refused:
    """The caller, and the request as the gateway acts on it (for a run: its record's context)."""
    ctx = request.context
    if endpoint is Endpoint.EDGE:
        return _edge_caller(request)
    if endpoint is Endpoint.PERSON:
        person = AdminCaller.of_subject(subject).person
        if person is None:
            return Refused("denied", "not_permitted", f"{subject} names no person", Caller("unverified"))
        caller = Caller("person", person=person)
        refusal = await authorize(AdminCaller(person), "tools", "call") if authorize is not None else None
        if refusal is not None:
            return Refused("denied", "not_permitted", refusal, caller)
        return _human(caller, request)
    if endpoint is Endpoint.OPERATOR:
        return _human(OPERATOR, request)
    acting = await custody.context_for(ctx)  # from here on the run's record says who acts for whom
    if isinstance(acting, CustodyRefusal):
        return Refused(acting.status, acting.reason, acting.detail, Caller("unverified", agent=ctx.agent))
    caller = Caller("agent" if acting.agent else "run", agent=acting.agent, run_id=acting.run_id)
    request = msgspec.structs.replace(request, context=acting)
    # The event's own delivery tools are the exception: a pipeline without an agent still answers
    # through `event_reply`, whose target is frozen from the event. A `platform_*` tool names its
    # own target: without an agent that is an operator's call alone.
    delivery_tool = request.tool in PLATFORM_TOOLS and PLATFORM_TOOLS[request.tool].frozen_target
    if caller.kind == "run" and not delivery_tool:
        return Refused("denied", "operator_only", (
            "a call without an agent is an operator call: send it to the operator subject "
            "(<prefix>.admin.tools.call), which only operator credentials may use"), caller)
    return caller, request


def _human(caller: Caller, request: ToolCallRequest) -> tuple[Caller, ToolCallRequest] | Refused:
    if request.context.agent is not None:
        return Refused("denied", "invalid_request",
                       "an operator call names no agent; agents' calls go to the tool-call subject", caller)
    return caller, request


def _edge_caller(request: ToolCallRequest) -> tuple[Caller, ToolCallRequest] | Refused:
    """What an mcp-edge call must say: the agent whose endpoint was called, the caller (kind
    `api`: the bearer token), its own task id (an approval pairs with it), and no run."""
    ctx = request.context
    if ctx.agent is None or ctx.actor is None or ctx.actor.kind != "api" or not ctx.task_id:
        return Refused("denied", "invalid_request",
                       "an edge call names its agent, its caller (actor kind 'api') and a task id",
                       Caller("unverified", agent=ctx.agent))
    caller = Caller("edge", agent=ctx.agent, token=ctx.actor.id.removeprefix(EDGE_TOKEN_PREFIX))
    if ctx.run_id is not None or ctx.delivery is not None:
        return Refused("denied", "invalid_request", "an edge call is no run: it names no run id and no delivery",
                       caller)
    return caller, request


def claimed_caller(endpoint: Endpoint, subject: str, request: ToolCallRequest) -> Caller:
    """The caller as far as the endpoint alone tells, for a call that failed inside the gateway
    before its caller was settled (the audit still names someone)."""
    if endpoint is Endpoint.OPERATOR:
        return OPERATOR
    if endpoint is Endpoint.PERSON:
        person = AdminCaller.of_subject(subject).person
        return Caller("person", person=person) if person else Caller("unverified")
    return Caller("unverified", agent=request.context.agent)
