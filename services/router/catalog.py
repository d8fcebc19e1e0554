"""Live copies of the bindings, agents and pipelines buckets, kept current by KV watchers.

The hot path reads these in memory; admin reads (`get`, `dry_run`) read the buckets directly
(`read_all`) so that they see a write the moment it was acknowledged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

import msgspec
from nats.js.kv import KeyValue

from services.router.selection import RouteTable
from shared.contracts.agent import AgentRouting
from shared.contracts.binding import Binding
from shared.contracts.pipeline import PipelineRouting
from shared.contracts.resource import ResourceError, parse_resource
from shared.logs import get_logger

log = get_logger("aurora.router.catalog")
T = TypeVar("T")
_DELETED = ("DEL", "PURGE")


async def read_all(kv: KeyValue) -> dict[str, bytes]:
    """Every live key and value of a bucket, as of now."""
    watcher = await kv.watchall()
    found: dict[str, bytes] = {}
    try:
        while True:
            entry = await watcher.updates(timeout=10.0)  # type: ignore[no-untyped-call]
            if entry is None:
                return found
            if entry.operation in _DELETED or entry.value is None:
                found.pop(entry.key, None)
            else:
                found[entry.key] = entry.value
    finally:
        await watcher.stop()  # type: ignore[no-untyped-call]


def decode_binding(data: bytes) -> Binding:
    return parse_resource(Binding, msgspec.json.decode(data))


_agent_decoder = msgspec.json.Decoder(AgentRouting)
_pipeline_decoder = msgspec.json.Decoder(PipelineRouting)


def decode_agent(data: bytes) -> AgentRouting:
    return _agent_decoder.decode(data)


def decode_pipeline(data: bytes) -> PipelineRouting:
    return _pipeline_decoder.decode(data)


class KvMirror(Generic[T]):
    """A dict that follows a KV bucket; entries that do not decode are left out and logged."""

    def __init__(self, kv: KeyValue, decode: Callable[[bytes], T], *, name: str,
                 on_change: Callable[[], None] | None = None) -> None:
        self._kv = kv
        self._decode = decode
        self._name = name
        self._on_change = on_change
        self.items: dict[str, T] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        if self._task is not None:
            return
        watcher = await self._kv.watchall()
        while (entry := await watcher.updates(timeout=10.0)) is not None:  # type: ignore[no-untyped-call]
            self._apply(entry.key, entry.value, entry.operation)
        self._changed()
        self._task = asyncio.create_task(self._follow(watcher), name=f"router-mirror-{self._name}")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _follow(self, watcher: KeyValue.KeyWatcher) -> None:
        try:
            async for entry in watcher:
                if entry is not None:
                    self._apply(entry.key, entry.value, entry.operation)
                    self._changed()
        finally:
            await watcher.stop()  # type: ignore[no-untyped-call]

    def _apply(self, key: str, value: bytes | None, operation: str | None) -> None:
        if operation in _DELETED or value is None:
            self.items.pop(key, None)
            return
        try:
            self.items[key] = self._decode(value)
        except (ResourceError, msgspec.DecodeError, msgspec.ValidationError) as exc:
            self.items.pop(key, None)
            log.warning("stored entry ignored", bucket=self._name, key=key, error=str(exc))

    def _changed(self) -> None:
        if self._on_change is not None:
            self._on_change()


class Catalog:
    """What the router routes with: the ranked bindings and the targets they name."""

    def __init__(self, bindings: KeyValue, agents: KeyValue, pipelines: KeyValue) -> None:
        self._bindings = KvMirror(bindings, decode_binding, name="bindings", on_change=self._stale)
        self._agents = KvMirror(agents, decode_agent, name="agents")
        self._pipelines = KvMirror(pipelines, decode_pipeline, name="pipelines")
        self._table: RouteTable | None = None

    async def start(self) -> None:
        for mirror in (self._bindings, self._agents, self._pipelines):
            await mirror.start()

    async def stop(self) -> None:
        for mirror in (self._bindings, self._agents, self._pipelines):
            await mirror.stop()

    def _stale(self) -> None:
        self._table = None

    @property
    def table(self) -> RouteTable:
        if self._table is None:
            self._table = RouteTable(self._bindings.items.values())
        return self._table

    def agent(self, agent_id: str) -> AgentRouting | None:
        return self._agents.items.get(agent_id)

    def pipeline(self, pipeline_id: str) -> PipelineRouting | None:
        return self._pipelines.items.get(pipeline_id)

    def counts(self) -> dict[str, int]:
        return {"bindings": len(self._bindings.items), "agents": len(self._agents.items),
                "pipelines": len(self._pipelines.items)}
