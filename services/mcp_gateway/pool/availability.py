"""Which tools an agent may use: bound ∩ published ∩ executable, with a reason for every
bound tool left out. The gateway serves this set and refuses any call outside it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from shared.contracts.tooldef import ToolDefinition


@dataclass(frozen=True)
class Exclusion:
    tool: str
    reason: str  # a stable code
    detail: str


@dataclass(frozen=True)
class Availability:
    available: tuple[ToolDefinition, ...]
    excluded: tuple[Exclusion, ...]

    def reason_for(self, tool: str) -> Exclusion | None:
        return next((e for e in self.excluded if e.tool == tool), None)


# Given a tool, why it cannot run right now (code, detail), or None when it can.
Executability = Callable[[ToolDefinition], tuple[str, str] | None]


def available_tools(
    bound: Sequence[str], tools: Mapping[str, ToolDefinition], executable: Executability
) -> Availability:
    available: list[ToolDefinition] = []
    excluded: list[Exclusion] = []
    for name in dict.fromkeys(bound):  # keep order, drop repeats
        tool = tools.get(name)
        if tool is None:
            excluded.append(Exclusion(name, "unknown_tool", "no tool definition with this name"))
            continue
        if tool.state != "PUBLISHED":
            excluded.append(Exclusion(name, "not_published", f"the tool is {tool.state}"))
            continue
        blocked = executable(tool)
        if blocked is not None:
            excluded.append(Exclusion(name, blocked[0], blocked[1]))
            continue
        available.append(tool)
    kept, dropped = _resolve_duplicates(available)
    return Availability(available=tuple(kept), excluded=(*excluded, *dropped))


def unresolved_duplicates(tools: Iterable[ToolDefinition]) -> list[str]:
    """Why these tools may not be bound together: each capability offered by two or more of
    them without exactly one reviewer-preferred winner (`aurora tools mark`)."""
    return [
        f"capability {capability!r} is provided by {', '.join(t.name for t in group)}: a reviewer marks which one "
        "wins (`aurora tools mark <tool> --capability ... --preferred`) before an agent may bind both"
        for capability, group in _by_capability(tools).items()
        if len(group) > 1 and sum(t.preferred for t in group) != 1
    ]


def _by_capability(tools: Iterable[ToolDefinition]) -> dict[str, list[ToolDefinition]]:
    by_capability: dict[str, list[ToolDefinition]] = {}
    for tool in tools:
        if tool.capability:
            by_capability.setdefault(tool.capability, []).append(tool)
    return by_capability


def _resolve_duplicates(tools: list[ToolDefinition]) -> tuple[list[ToolDefinition], list[Exclusion]]:
    """One capability may enter an agent once: a reviewer's `preferred` mark picks the winner;
    without one, every copy is left out rather than guessing."""
    dropped: dict[str, Exclusion] = {}
    for capability, group in _by_capability(tools).items():
        if len(group) < 2:
            continue
        winners = [t for t in group if t.preferred]
        for tool in group:
            if len(winners) == 1 and tool is winners[0]:
                continue
            detail = (
                f"capability {capability!r} is also provided by {winners[0].name!r}, which a reviewer preferred"
                if len(winners) == 1
                else f"capability {capability!r} is bound twice ({', '.join(t.name for t in group)}) and no "
                "reviewer marked exactly one as preferred"
            )
            dropped[tool.name] = Exclusion(tool.name, "duplicate_capability", detail)
    return [t for t in tools if t.name not in dropped], list(dropped.values())
