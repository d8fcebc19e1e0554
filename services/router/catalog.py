"""Live copies of the bindings, agents and pipelines buckets, kept current by KV watchers.

The hot path reads these in memory; admin reads (`get`, `dry_run`) read the buckets directly
(`shared.jetstream.kvmirror.read_all`) so that they see a write the moment it was acknowledged. An event
that matched no binding, or named a target the mirror lacks, is routed again once the mirror has
what the bucket holds now (`bindings_caught_up`, `read_through`): a binding applied just before
its event is not missed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable

import msgspec
from nats.js.kv import KeyValue

from services.router.selection import RouteTable
from shared.contracts.agent import AgentRouting
from shared.contracts.binding import Binding
from shared.contracts.pipeline import PipelineRouting
from shared.contracts.resource import parse_resource
from shared.contracts.run import RunTarget
from shared.jetstream.kvmirror import KvMirror
from shared.lifecycle import Lifecycle
from shared.observability.logs import get_logger

log = get_logger("aurora.router.catalog")


def decode_binding(data: bytes) -> Binding:
    return parse_resource(Binding, msgspec.json.decode(data))


_agent_decoder = msgspec.json.Decoder(AgentRouting)
_pipeline_decoder = msgspec.json.Decoder(PipelineRouting)


def decode_agent(data: bytes) -> AgentRouting:
    return _agent_decoder.decode(data)


def decode_pipeline(data: bytes) -> PipelineRouting:
    return _pipeline_decoder.decode(data)


class RouteCatalog(Lifecycle[None]):
    """What the router routes with: the ranked bindings and the targets they name."""

    def __init__(self, bindings: KeyValue, agents: KeyValue, pipelines: KeyValue) -> None:
        super().__init__("the router's catalog")
        self._bindings = KvMirror(bindings, decode_binding, name="bindings", on_change=self._stale)
        self._agents = KvMirror(agents, decode_agent, name="agents")
        self._pipelines = KvMirror(pipelines, decode_pipeline, name="pipelines")
        self._table: RouteTable | None = None

    async def _start(self, parts: contextlib.AsyncExitStack) -> None:
        for mirror in (self._bindings, self._agents, self._pipelines):
            parts.push_async_callback(mirror.stop)
            await mirror.start()

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

    @property
    def bindings_revision(self) -> int:
        """The bindings bucket's last sequence the copy has taken in (it grows with every change)."""
        return self._bindings.revision

    async def bindings_caught_up(self) -> bool:
        """Take in the bindings written before now that the watch has not brought yet; True when
        there were any (an event routed a moment ago may match one of them). False when the
        bucket cannot be read now (JetStream electing a leader): the events keep their route."""
        try:
            return await self._bindings.catch_up()
        except Exception as exc:
            log.warning("bindings not read through; routing with the watched copy",
                        error=f"{type(exc).__name__}: {exc}")
            return False

    async def read_through(self, targets: Iterable[RunTarget]) -> bool:
        """Look the targets up in their buckets now (the watch may lag behind a write another
        service just made); True when any of them exists after all."""
        found = False
        for target in targets:
            mirror = self._agents if target.type == "agent" else self._pipelines
            try:
                found = await mirror.read_through(target.id) is not None or found
            except Exception as exc:  # as for the bindings: the watched copy decides
                log.warning("target not read through", target=f"{target.type}/{target.id}",
                            error=f"{type(exc).__name__}: {exc}")
        return found

    def counts(self) -> dict[str, int]:
        return {"bindings": len(self._bindings.items), "agents": len(self._agents.items),
                "pipelines": len(self._pipelines.items)}

    def summary(self) -> dict[str, object]:
        """The counts, and the last sequence of each bucket the copy has taken in: a copy whose
        revision has reached the bucket's last sequence routes by every write made before then."""
        return {**self.counts(), "revisions": {"bindings": self._bindings.revision,
                                               "agents": self._agents.revision,
                                               "pipelines": self._pipelines.revision}}
