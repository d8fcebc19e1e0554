"""The pool's state in JetStream KV (systems, tool definitions, agents), mirrored in memory.

Every gateway instance writes through KV and reads its mirror, so several gateways agree.
MCP tools discovered from apps are synced in as definitions (`discovered.py`): published at once when the app is
trusted (`governance: auto`), drafts otherwise; a changed contract bumps the version.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from nats.js import JetStreamContext
from nats.js.errors import InvalidKeyError, KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from services.mcp_gateway.pool.discovered import changed_by_app, contract, mcp_definition
from services.mcp_gateway.pool.live_catalog import CatalogTool
from services.mcp_gateway.pool.wording import apply_wording
from shared.config.appconfig import AppConfig
from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.agent import Agent
from shared.contracts.resource import ResourceError, ResourceModel, canonical_json, parse_resource
from shared.contracts.skill import Skill
from shared.contracts.subjects import Subjects
from shared.contracts.system import System
from shared.contracts.tooldef import TOOL_NAME_PATTERN, ToolDefinition
from shared.errors import AuroraError
from shared.jetstream.kvmirror import KvMirror
from shared.jetstream.streams import agents_bucket, ensure_bucket, skills_bucket, systems_bucket, tools_bucket
from shared.lifecycle import Lifecycle
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway.pool")
M = TypeVar("M", bound=ResourceModel)
_TOOL_NAME = re.compile(TOOL_NAME_PATTERN)


class PoolError(AuroraError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _decoder(model: type[ResourceModel]) -> Callable[[bytes], Any]:
    return lambda data: parse_resource(model, json.loads(data))


@dataclass(frozen=True)
class _Mirrors:
    """The pool's buckets and their mirrors, once started."""

    kv: Mapping[str, KeyValue]
    tools: KvMirror[ToolDefinition]
    systems: KvMirror[System]
    agents: KvMirror[Agent]
    skills: KvMirror[Skill]

    def of(self, bucket: str) -> KvMirror[Any]:
        mirrors: dict[str, KvMirror[Any]] = {"tools": self.tools, "systems": self.systems,
                                             "agents": self.agents, "skills": self.skills}
        return mirrors[bucket]


class ToolPool(Lifecycle[_Mirrors]):
    """`on_change` is told when a tool, system or agent changes (in any gateway)."""

    def __init__(self, js: JetStreamContext, subjects: Subjects,
                 on_change: Callable[[], None] | None = None, plan: StreamPlan = DEFAULT_PLAN) -> None:
        super().__init__("the tool pool")
        self._js = js
        self._plan = plan
        self._subjects = subjects
        self._on_change = on_change

    async def _start(self, parts: contextlib.AsyncExitStack) -> _Mirrors:
        subjects, on_change = self._subjects, self._on_change
        kv = {key: await ensure_bucket(self._js, spec, plan=self._plan) for key, spec in (
            ("tools", tools_bucket(subjects)), ("systems", systems_bucket(subjects)),
            ("agents", agents_bucket(subjects)), ("skills", skills_bucket(subjects)))}
        mirrors = _Mirrors(
            kv=kv,
            tools=KvMirror(kv["tools"], _decoder(ToolDefinition), name="tools", on_change=on_change),
            systems=KvMirror(kv["systems"], _decoder(System), name="systems", on_change=on_change),
            agents=KvMirror(kv["agents"], _decoder(Agent), name="agents", on_change=on_change),
            skills=KvMirror(kv["skills"], _decoder(Skill), name="skills"),
        )
        for mirror in (mirrors.tools, mirrors.systems, mirrors.agents, mirrors.skills):
            parts.push_async_callback(mirror.stop)
            await mirror.start()
        return mirrors

    def bucket(self, name: str) -> KeyValue:
        """The KV bucket behind `tools`, `systems`, `agents` or `skills` (for admin handlers)."""
        return self.require_started().kv[name]

    # -- reads (memory) ----------------------------------------------------------------------
    @property
    def tools(self) -> dict[str, ToolDefinition]:
        return self.require_started().tools.items

    @property
    def systems(self) -> dict[str, System]:
        return self.require_started().systems.items

    @property
    def agents(self) -> dict[str, Agent]:
        return self.require_started().agents.items

    @property
    def skills(self) -> dict[str, Skill]:
        return self.require_started().skills.items

    async def skill(self, skill_id: str) -> Skill | None:
        """The skill from memory, or from KV: one applied a moment ago (the same file as the
        agent naming it) must be found."""
        return await self._read_through("skills", skill_id, Skill)

    async def tool(self, name: str) -> ToolDefinition | None:
        """The tool from memory, or — when the mirror has not seen it yet — from KV. A name no
        pool tool can have (a platform tool's `event_reply`, no `<system>.` in front) is not
        looked up: every reply would otherwise cost a bucket read, and fail while the cluster
        elects the bucket's leader."""
        if _TOOL_NAME.match(name) is None:
            return None
        return await self._read_through("tools", name, ToolDefinition)

    async def agent(self, agent_id: str) -> Agent | None:
        """The agent from memory, or from KV: an agent applied a moment ago must not be refused."""
        return await self._read_through("agents", agent_id, Agent)

    async def _read_through(self, bucket: str, key: str, model: type[M]) -> M | None:
        mirror = self._mirror(bucket)
        found = mirror.items.get(key)
        if found is not None:
            return found  # type: ignore[no-any-return]
        try:
            entry = await self.bucket(bucket).get(key)
        except (KeyNotFoundError, InvalidKeyError):
            return None
        if entry.value is None:
            return None
        try:
            value = parse_resource(model, json.loads(entry.value))
        except (ResourceError, ValueError):
            return None
        mirror.items.setdefault(key, value)
        return value

    # -- writes (KV, compare-and-set) --------------------------------------------------------
    async def put_system(self, system: System) -> str:
        return await self._put("systems", system.name, system)

    async def put_tool(self, tool: ToolDefinition) -> str:
        return await self._put("tools", tool.name, tool)

    async def delete(self, bucket: str, key: str) -> bool:
        try:
            await self.bucket(bucket).get(key)
        except KeyNotFoundError:
            return False
        await self.bucket(bucket).delete(key)
        self._mirror(bucket).items.pop(key, None)
        return True

    async def update_tool(self, name: str, change: Callable[[ToolDefinition], ToolDefinition]) -> ToolDefinition:
        """Apply `change` to the stored tool with a compare-and-set, retrying on a race."""
        return await self._update("tools", name, ToolDefinition, change)

    async def update_system(self, name: str, change: Callable[[System], System]) -> System:
        return await self._update("systems", name, System, change)

    async def _update(self, bucket: str, key: str, model: type[M], change: Callable[[M], M]) -> M:
        kv = self.bucket(bucket)
        kind = bucket.removesuffix("s")
        for _ in range(10):
            try:
                entry = await kv.get(key)
            except KeyNotFoundError as exc:
                raise PoolError(f"unknown_{kind}", f"no {kind} named {key!r}") from exc
            assert entry.value is not None and entry.revision is not None
            updated = change(parse_resource(model, json.loads(entry.value)))
            try:
                await kv.update(key, canonical_json(updated), last=entry.revision)
            except KeyWrongLastSequenceError:
                continue
            self._mirror(bucket).items[key] = updated
            return updated
        raise PoolError("conflict", f"{kind} {key!r} kept changing; try again")

    async def _put(self, bucket: str, key: str, value: ResourceModel) -> str:
        """created | updated | unchanged"""
        kv = self.bucket(bucket)
        data = canonical_json(value)
        try:
            entry = await kv.get(key)
        except KeyNotFoundError:
            entry = None
        if entry is not None and entry.value == data:
            return "unchanged"
        await kv.put(key, data)
        self._mirror(bucket).items[key] = value
        return "created" if entry is None else "updated"

    def _mirror(self, bucket: str) -> KvMirror[Any]:
        return self.require_started().of(bucket)

    # -- MCP discovery -----------------------------------------------------------------------
    async def sync_mcp_app(self, app: AppConfig, tools: Iterable[CatalogTool], now: str) -> None:
        """Register the app as an MCP system (once) and its tools as definitions."""
        if app.app_id not in self.systems:
            await self._create(
                "systems", app.app_id, System(name=app.app_id, type="mcp", description=f"MCP app {app.name}")
            )
        for tool in tools:
            discovered = mcp_definition(app, tool, now)
            existing = self.tools.get(tool.name)
            if existing is None:
                await self._create("tools", tool.name, discovered)
                continue
            if existing.source != "mcp":
                log.error(
                    "MCP tool shadows a definition of another source; kept the existing one",
                    tool=tool.name,
                    source=existing.source,
                )
                continue
            # A reviewer's wording (aurora tools edit) stands over the app's; only a change of the
            # contract beyond it is the app's change.
            discovered = apply_wording(discovered, existing.edited)
            if contract(existing) != contract(discovered):
                await self.update_tool(tool.name, functools.partial(changed_by_app, new=discovered, app=app, now=now))

    async def _create(self, bucket: str, key: str, value: ResourceModel) -> None:
        try:
            await self.bucket(bucket).create(key, canonical_json(value))
        except KeyWrongLastSequenceError:
            return  # another gateway registered it first
        self._mirror(bucket).items[key] = value
