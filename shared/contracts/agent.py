"""The agent spec as far as routing needs it (`kind: Agent`); the tool pool extends it.

`Agent` is the strict edge model that `aurora apply` validates. `AgentRouting` is the tolerant
view the router reads from the agents bucket: it ignores fields it does not know, so when the
gateway later owns and extends agents, an older router still reads them.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from pydantic import Field

from shared.contracts.event_pattern import EventPattern, matches
from shared.contracts.resource import ResourceId, ResourceModel

AgentKind = Literal["llm", "playbook"]
ToolName = Annotated[str, Field(min_length=1, max_length=256)]


class Agent(ResourceModel):
    kind: Literal["Agent"] = "Agent"
    id: ResourceId
    agent_kind: AgentKind
    events: tuple[EventPattern, ...] = ()
    tools: tuple[ToolName, ...] = ()
    allowed_platform_tools: tuple[ToolName, ...] = ()
    enabled: bool = True
    description: Annotated[str, Field(max_length=2000)] = ""
    model: str | None = None
    prompt: str | None = None
    skills: tuple[str, ...] = ()

    def accepts(self, event_type: str) -> bool:
        return any(matches(pattern, event_type) for pattern in self.events)


class AgentRouting(msgspec.Struct, frozen=True, kw_only=True):
    """What the router reads of a stored agent: which events it takes and whether it is on."""

    id: str
    agent_kind: str = "llm"
    events: tuple[str, ...] = ()
    enabled: bool = True

    def accepts(self, event_type: str) -> bool:
        return any(matches(pattern, event_type) for pattern in self.events)
