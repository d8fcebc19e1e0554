"""Where an A2A tool runs, as the call ledger sees it: the system, its timeout, and whether a call
in doubt may be sent again (only when the operator says the agent deduplicates on message ids)."""

from __future__ import annotations

from services.mcp_gateway.calls.targets import target_of
from shared.contracts.system import A2AAgentSource, System
from shared.contracts.tooldef import A2AExecution, ToolDefinition


def system(deduplicates: bool) -> System:
    return System(name="parts", type="a2a", base_url="https://parts.example/rpc", timeout_seconds=45.0,
                  a2a=A2AAgentSource(card_url="https://parts.example/.well-known/agent-card.json",
                                     deduplicates=deduplicates))


TOOL = ToolDefinition(name="parts.book", system="parts", execution=A2AExecution(skill="book"))


def test_an_a2a_call_deduplicates_only_when_the_operator_says_the_agent_does() -> None:
    assert target_of(TOOL, None, {}, {"parts": system(False)}).deduplicates is False
    target = target_of(TOOL, None, {}, {"parts": system(True)})
    assert (target.name, target.timeout, target.deduplicates) == ("parts", 45.0, True)
    assert target_of(TOOL, 5.0, {}, {"parts": system(True)}).timeout == 5.0
