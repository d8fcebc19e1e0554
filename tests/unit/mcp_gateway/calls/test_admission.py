"""Admission as tables: caller × tool × policies → run, wait for an approval (how many grants),
or refused. The pipeline asks exactly these functions (`services.mcp_gateway.calls.admission`)."""

from __future__ import annotations

import re

import pytest

from services.mcp_gateway.calls.admission import Hold, Refusal, ToolState, approval_needed, binding_refusal
from services.mcp_gateway.calls.approval_gate import approval_task
from services.mcp_gateway.calls.caller import OPERATOR, PLATFORM, Caller
from shared.contracts.agent import Agent
from shared.contracts.approval_policy import ApprovalPolicy, Rules, rules_for
from shared.contracts.toolcall import ToolCallContext

AGENT = Caller("agent", agent="helper", run_id="r-1")
PERSON = Caller("person", person="oscar")
EDGE = Caller("edge", agent="helper", token="tok1")
RUN = Caller("run", run_id="r-2")  # a pipeline's run without an agent
NOTES = ApprovalPolicy(id="notes", tools=("demo.notes.*",), roles=("approver",), dangerous_needs_two=True)
OFF = NOTES.model_copy(update={"id": "off", "enabled": False})
OTHER = ApprovalPolicy(id="other", tools=("demo.weather.*",), roles=("approver",))


def rules(tool: str, side_effect: str, *policies: ApprovalPolicy) -> Rules:
    return rules_for(policies, tool, "demo.notes", side_effect)


# caller, tool, side effect, policies → None (runs at once) or (grants, policy ids)
APPROVALS: list[tuple[Caller, str, str, tuple[ApprovalPolicy, ...], tuple[int, tuple[str, ...]] | None]] = [
    # A read never waits, whoever calls.
    (AGENT, "demo.notes.list_notes", "read", (NOTES,), None),
    (PERSON, "demo.notes.list_notes", "read", (NOTES,), None),
    (OPERATOR, "demo.notes.list_notes", "read", (NOTES,), None),
    # An agent's (and an edge token's) writes always wait: the default when no policy covers them.
    (AGENT, "demo.weather.set", "write", (), (1, ("default",))),
    (EDGE, "demo.weather.set", "write", (), (1, ("default",))),
    (AGENT, "demo.notes.delete_note", "dangerous", (NOTES,), (2, ("notes",))),
    (EDGE, "demo.notes.delete_note", "dangerous", (NOTES,), (2, ("notes",))),
    # People and the shared operator identity: a policy-covered call waits as an agent's does ...
    (PERSON, "demo.notes.add_note", "write", (NOTES,), (1, ("notes",))),
    (OPERATOR, "demo.notes.add_note", "write", (NOTES,), (1, ("notes",))),
    (PERSON, "demo.notes.delete_note", "dangerous", (NOTES,), (2, ("notes",))),
    (OPERATOR, "demo.notes.delete_note", "dangerous", (NOTES,), (2, ("notes",))),
    # ... a dangerous tool always (under the built-in default when no policy covers it) ...
    (PERSON, "demo.weather.wipe", "dangerous", (), (1, ("default",))),
    (OPERATOR, "demo.weather.wipe", "dangerous", (OTHER,), (2, ("other",))),  # policies default to four eyes
    # ... and a write no enabled policy covers runs at once: the operator role is the right to call.
    (PERSON, "demo.weather.set", "write", (), None),
    (OPERATOR, "demo.notes.add_note", "write", (OFF,), None),
    (PERSON, "demo.notes.add_note", "write", (OTHER,), None),
    # An agent-less run's calls (a pipeline's event tools) and the gateway's own never wait.
    (RUN, "event_reply", "write", (), None),
    (PLATFORM, "event_reply", "write", (), None),
]


@pytest.mark.parametrize(("caller", "tool", "side_effect", "policies", "expected"), APPROVALS)
def test_who_waits_for_which_approval(caller: Caller, tool: str, side_effect: str,
                                      policies: tuple[ApprovalPolicy, ...],
                                      expected: tuple[int, tuple[str, ...]] | None) -> None:
    hold = approval_needed(caller, side_effect, rules(tool, side_effect, *policies))  # type: ignore[arg-type]
    assert (None if hold is None else (hold.required_grants, hold.policies)) == expected


def test_a_platform_tool_that_cannot_be_gated_never_waits() -> None:
    assert approval_needed(PERSON, "dangerous", rules("x", "dangerous"), gated=False) is None


def test_without_the_policies_read_only_an_agents_write_waits() -> None:
    """An agent presenting an approval is checked without reading the policies (one grant)."""
    assert approval_needed(AGENT, "write", None) == Hold(1, (), chat=False)
    assert approval_needed(OPERATOR, "write", None) is None
    assert approval_needed(OPERATOR, "dangerous", None) == Hold(1, (), chat=False)


def test_the_chat_decides_only_when_the_agent_asks_and_the_policy_delegates() -> None:
    shorthand = rules_for((), "demo.notes.add_note", None, "write", chat_shorthand=True)
    assert approval_needed(AGENT, "write", shorthand, chat_asked=True, requester="im.qq:u1") == Hold(
        1, ("agent-chat-approval",), chat=True)
    assert approval_needed(AGENT, "write", shorthand, chat_asked=True, requester=None) == Hold(
        1, ("agent-chat-approval",), chat=False)


HELPER = Agent(id="helper", agent_kind="llm", tools=("demo.notes.add_note",))
OFF_AGENT = HELPER.model_copy(update={"enabled": False})
FREE = ToolState("demo.notes.add_note", deprecated=False, blocked=None)
BLOCKED = ToolState("demo.notes.add_note", deprecated=False, blocked=("app_unavailable", "restarting"))
DISABLED = ToolState("demo.notes.add_note", deprecated=False, blocked=("system_disabled", "off"))
OLD = ToolState("demo.notes.add_note", deprecated=True, blocked=None)
UNBOUND = ToolState("demo.notes.delete_note", deprecated=False, blocked=None)
LEFT_OUT = ToolState("demo.notes.add_note", deprecated=False, blocked=("app_unavailable", "restarting"),
                     excluded=("app_unavailable", "restarting"))
DRAFT_OUT = ToolState("demo.notes.add_note", deprecated=False, blocked=None, excluded=("not_published", "a draft"))

BINDINGS: list[tuple[Caller, ToolState, Agent | None, tuple[str, str] | None]] = [
    (AGENT, FREE, HELPER, None),
    (EDGE, FREE, HELPER, None),
    (PERSON, FREE, None, None),
    (OPERATOR, FREE, None, None),
    (PERSON, OLD, None, ("denied", "deprecated")),  # deprecated for everyone
    (AGENT, OLD, HELPER, ("denied", "deprecated")),
    (PERSON, BLOCKED, None, ("unavailable", "app_unavailable")),  # people: any tool that can run now
    (OPERATOR, DISABLED, None, ("denied", "system_disabled")),
    (AGENT, UNBOUND, HELPER, ("denied", "not_bound")),  # agents: only what is bound to them ...
    (EDGE, UNBOUND, HELPER, ("denied", "not_bound")),
    (AGENT, FREE, None, ("denied", "unknown_agent")),
    (AGENT, FREE, OFF_AGENT, ("denied", "agent_disabled")),
    (AGENT, LEFT_OUT, HELPER, ("unavailable", "app_unavailable")),  # ... and available (transient: ask again)
    (AGENT, DRAFT_OUT, HELPER, ("denied", "not_published")),
]


@pytest.mark.parametrize(("caller", "tool", "agent", "expected"), BINDINGS)
def test_who_may_use_which_tool(caller: Caller, tool: ToolState, agent: Agent | None,
                                expected: tuple[str, str] | None) -> None:
    refusal = binding_refusal(caller, tool, agent)
    assert (None if refusal is None else (refusal.status, refusal.reason)) == expected
    assert refusal is None or (isinstance(refusal, Refusal) and refusal.detail)


def test_callers_are_named_for_the_audit_and_for_approvals() -> None:
    assert [c.name for c in (AGENT, PERSON, OPERATOR, EDGE, RUN, PLATFORM, Caller("unverified"))] == [
        "agent:helper", "person:oscar", "operator", "edge:tok1", "run:r-2", "platform", "anonymous"]
    assert PERSON.requester == "oscar" and OPERATOR.requester == "operator"


def test_a_humans_approval_is_bound_to_their_own_task() -> None:
    """Kept under the caller's name, as a KV key may be: the runners look an approval's task up."""
    mine = ToolCallContext(task_id="cli-1")
    assert approval_task(PERSON, mine, "m-1") == "person.oscar.cli-1"
    assert approval_task(Caller("person", person="amy"), mine, "m-1") == "person.amy.cli-1"
    assert approval_task(OPERATOR, mine, "m-1") == "operator.cli-1"
    assert approval_task(OPERATOR, ToolCallContext(), "m-1") == "operator.m-1"  # no task: the call's own id
    odd = approval_task(PERSON, ToolCallContext(task_id="a b:c"), "m-1")
    assert odd is not None and re.fullmatch(r"person\.oscar\.h-[0-9a-f]{32}", odd)
    assert approval_task(AGENT, ToolCallContext(task_id="r-1"), "m-1") == "r-1"  # a run's task is its own
