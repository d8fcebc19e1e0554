"""Live copies of the agents, pipelines and tool definitions, with a direct read on a miss (an
agent applied a moment before its first event may not have reached the mirror yet); skills are
read directly each run."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any, TypeVar

from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from services.runner.stores import RunnerStores
from shared.contracts.agent import Agent
from shared.contracts.pipeline import Pipeline
from shared.contracts.resource import ResourceError, ResourceModel, parse_resource
from shared.contracts.skill import Skill
from shared.contracts.tooldef import ToolDefinition
from shared.jetstream.kvmirror import KvMirror
from shared.lifecycle import Lifecycle
from shared.observability.logs import get_logger

log = get_logger("aurora.runner.catalog")
M = TypeVar("M", bound=ResourceModel)


def _decoder(model: type[M]) -> Callable[[bytes], M]:
    return lambda data: parse_resource(model, json.loads(data))


class AgentCatalog(Lifecycle[None]):
    def __init__(self, stores: RunnerStores) -> None:
        super().__init__("the runner's catalog")
        self._stores = stores
        self.agents: KvMirror[Agent] = KvMirror(stores.agents, _decoder(Agent), name="agents")
        self.pipelines: KvMirror[Pipeline] = KvMirror(stores.pipelines, _decoder(Pipeline), name="pipelines")
        self.tools: KvMirror[ToolDefinition] = KvMirror(stores.tools, _decoder(ToolDefinition), name="tools")

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        for mirror in (self.agents, self.pipelines, self.tools):
            parts.push_async_callback(mirror.stop)
            await mirror.start()

    async def skill(self, skill_id: str) -> Skill | None:
        """The skill as stored now: read directly, not mirrored, so the run after an apply uses the
        new version for sure (a run reads only its agent's few skills)."""
        return await _read(self._stores.skills, skill_id, Skill)

    async def agent(self, agent_id: str) -> Agent | None:
        return self.agents.items.get(agent_id) or await _read(self._stores.agents, agent_id, Agent)

    async def pipeline(self, pipeline_id: str) -> Pipeline | None:
        return self.pipelines.items.get(pipeline_id) or await _read(self._stores.pipelines, pipeline_id, Pipeline)

    def input_schema(self, tool: str) -> dict[str, Any] | None:
        """The tool's input schema as the pool published it (which arguments are secret); None: unknown."""
        found = self.tools.items.get(tool)
        return found.input_schema if found is not None else None

    def side_effect(self, tool: str) -> str:
        """What the pool says the tool does; a tool the pool does not know is treated as a write."""
        found = self.tools.items.get(tool)
        return found.side_effect if found is not None else "write"


async def _read(kv: KeyValue, key: str, model: type[M]) -> M | None:
    try:
        entry = await kv.get(key)
    except KeyNotFoundError:
        return None
    if entry.value is None:
        return None
    try:
        return parse_resource(model, json.loads(entry.value))
    except (ResourceError, ValueError) as exc:
        log.warning("stored resource ignored", key=key, error=str(exc))
        return None
