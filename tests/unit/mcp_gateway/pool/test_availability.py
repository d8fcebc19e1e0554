"""An agent's available set: bound ∩ published ∩ executable, each exclusion with its reason."""

from __future__ import annotations

from services.mcp_gateway.pool.availability import available_tools
from shared.contracts.tooldef import McpExecution, ToolDefinition


def tool(name: str, **changes: object) -> ToolDefinition:
    base = ToolDefinition(name=name, system="sys", description=name, state="PUBLISHED",
                          execution=McpExecution(app="sys", tool=name.rsplit(".", 1)[1]))
    return base.model_copy(update=changes)


def never_blocked(_: ToolDefinition) -> tuple[str, str] | None:
    return None


def test_only_bound_published_executable_tools_are_available() -> None:
    tools = {
        "sys.a": tool("sys.a"),
        "sys.b": tool("sys.b", state="DRAFT"),
        "sys.c": tool("sys.c", state="DEPRECATED"),
        "sys.d": tool("sys.d"),
        "sys.unbound": tool("sys.unbound"),
    }

    def blocked(t: ToolDefinition) -> tuple[str, str] | None:
        return ("system_disabled", "system sys is disabled") if t.name == "sys.d" else None

    result = available_tools(["sys.a", "sys.b", "sys.c", "sys.d", "sys.gone"], tools, blocked)
    assert [t.name for t in result.available] == ["sys.a"]
    reasons = {e.tool: e.reason for e in result.excluded}
    assert reasons == {"sys.b": "not_published", "sys.c": "not_published", "sys.d": "system_disabled",
                       "sys.gone": "unknown_tool"}


def test_duplicate_capabilities_need_a_reviewer_to_pick_the_winner() -> None:
    mcp = tool("sys.lookup", capability="customer.lookup")
    http = tool("crm.lookup", capability="customer.lookup")
    undecided = available_tools(["sys.lookup", "crm.lookup"], {t.name: t for t in (mcp, http)}, never_blocked)
    assert undecided.available == ()
    assert {e.reason for e in undecided.excluded} == {"duplicate_capability"}

    preferred = http.model_copy(update={"preferred": True})
    decided = available_tools(["sys.lookup", "crm.lookup"], {t.name: t for t in (mcp, preferred)}, never_blocked)
    assert [t.name for t in decided.available] == ["crm.lookup"]
    assert decided.reason_for("sys.lookup") is not None


def test_binding_one_capability_twice_needs_exactly_one_preferred() -> None:
    from services.mcp_gateway.pool.availability import unresolved_duplicates

    mcp, http = tool("crm.find", capability="customer.lookup"), tool("erp.find", capability="customer.lookup")
    [problem] = unresolved_duplicates([mcp, http, tool("crm.other", capability="other")])
    assert "'customer.lookup' is provided by crm.find, erp.find" in problem and "tools mark" in problem
    assert unresolved_duplicates([mcp.model_copy(update={"preferred": True}), http]) == []
    both = [mcp.model_copy(update={"preferred": True}), http.model_copy(update={"preferred": True})]
    assert len(unresolved_duplicates(both)) == 1  # two winners is no decision
    assert unresolved_duplicates([mcp, tool("crm.plain")]) == []
