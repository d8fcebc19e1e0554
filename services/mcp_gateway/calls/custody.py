"""Custody: what decides a call on `amp.tool.call` comes from the router's run record.

A runner's credential is not trusted to say which agent it is, where a reply goes or who may
approve a write: model output runs there. So every call on the tool-call subject names its run
(`context.run_id`), and the gateway reads that run's record — written by the router before it
published the run, in a bucket only the router may write — and decides from the record alone:

- a run without a record was never dispatched: `denied` `unknown_run`;
- the task must be the run's (a task's id is its run's id): else `task_mismatch`;
- an agent run acts as its agent; naming another is `agent_mismatch`. A pipeline run may act
  as the agent of one of its AI stages (read from the pipeline's definition), or as no agent,
  which leaves it the event's own `event_*` tools only (`calls.caller`);
- the delivery target, the source app, the session and the actor (the chat approver) are the
  record's; the caller's `context.delivery` / `context.actor` / `context.session_id` are
  replaced, whatever they said;
- `synthetic` is the record's OR the caller's: a caller may only restrict itself further.

Operator and person calls (`amp.admin.tools.call`, `….u.<name>`) and edge calls are not runs and
do not pass through here (`calls.caller`).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import msgspec
from nats.js.errors import BucketNotFoundError, KeyNotFoundError
from nats.js.kv import KeyValue

from shared.contracts.run import RunRecord
from shared.contracts.toolcall import ToolActor, ToolCallContext
from shared.jetstream.run_records import decode_record, is_record_key, read_record
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway.custody")
OpenBucket = Callable[[], Awaitable[KeyValue]]


@dataclass(frozen=True)
class CustodyRefusal:
    status: str  # denied | unavailable
    reason: str  # unknown_run | task_mismatch | agent_mismatch | run_records_unavailable
    detail: str


def record_delivery(record: RunRecord) -> dict[str, Any]:
    """The delivery context as the runner's wire carries it, built from the record only."""
    return {
        "reply_target": msgspec.to_builtins(record.reply_target) if record.reply_target is not None else None,
        "capabilities": list(record.capabilities),
        "source_app": record.source_app,
    }


def pipeline_agents(document: Mapping[str, Any]) -> frozenset[str]:
    """The agents of a stored pipeline's AI (`agent`) stages; what the runner's pipeline
    driver sets as the acting agent (`services.runner.drivers.pipeline`)."""
    agents: set[str] = set()
    for stage in document.get("stages") or ():
        if not isinstance(stage, Mapping) or stage.get("type") != "agent":
            continue
        config = stage.get("config")
        agent = config.get("agent") if isinstance(config, Mapping) else None
        if isinstance(agent, str):
            agents.add(agent)
    return frozenset(agents)


def resolve(ctx: ToolCallContext, record: RunRecord | None, *,
            allowed_agents: frozenset[str] = frozenset()) -> ToolCallContext | CustodyRefusal:
    """The context the gateway acts on: the caller's step, approval and idempotency key, and
    the record's everything else. `allowed_agents`: for a pipeline run, its AI stages' agents."""
    if record is None:
        return CustodyRefusal("denied", "unknown_run",
                              f"no run {ctx.run_id!r} was dispatched: a tool call must name the run it is for")
    if ctx.task_id != record.run_id:
        return CustodyRefusal("denied", "task_mismatch",
                              f"task {ctx.task_id!r} is not the task of run {record.run_id!r}")
    agent: str | None
    if record.target.type == "agent":
        if ctx.agent is not None and ctx.agent != record.target.id:
            return CustodyRefusal("denied", "agent_mismatch",
                                  f"run {record.run_id} is agent {record.target.id!r}'s, not {ctx.agent!r}'s")
        agent = record.target.id
    else:
        if ctx.agent is not None and ctx.agent not in allowed_agents:
            stages = ", ".join(sorted(allowed_agents)) or "none"
            return CustodyRefusal("denied", "agent_mismatch",
                                  f"agent {ctx.agent!r} is no AI stage of pipeline {record.target.id!r} "
                                  f"(its stages' agents: {stages})")
        agent = ctx.agent
    actor = ToolActor(id=record.actor.id, kind=record.actor.kind) if record.actor is not None else None
    return msgspec.structs.replace(
        ctx, agent=agent, run_id=record.run_id, session_id=record.session_id, actor=actor,
        delivery=record_delivery(record), synthetic=record.synthetic or ctx.synthetic,
    )


# Run records kept decoded (least recently used out first). A record is needed only while its run
# makes calls, and the runs making calls at one time are the runners' concurrency (16 each by
# default); a run that calls again after it fell out (one resumed hours later by an approval) costs
# one KV get. A decoded record is about 1.3 KiB, so the former 4,096 were 5 MiB that went on
# filling for minutes after `make soak`'s warm-up (docs/benchmarks.md); 256 are 0.3 MiB, full
# seconds into any load.
RECORD_CACHE_SIZE = 256


class Custody:
    """Reads run records (cached: a record never changes) and pipelines (read each time: an
    operator may change a pipeline while its runs go on)."""

    def __init__(self, records: KeyValue, open_pipelines: OpenBucket, *,
                 cache_size: int = RECORD_CACHE_SIZE) -> None:
        self._records = records
        self._open_pipelines = open_pipelines
        self._pipelines: KeyValue | None = None
        self._cache: OrderedDict[str, RunRecord] = OrderedDict()
        self._cache_size = cache_size

    @property
    def cached(self) -> int:
        """How many run records are held decoded now (at most the cache size)."""
        return len(self._cache)

    async def context_for(self, ctx: ToolCallContext) -> ToolCallContext | CustodyRefusal:
        try:
            record = await self.record(ctx.run_id)
            allowed = frozenset[str]()
            if record is not None and record.target.type == "pipeline" and ctx.agent is not None:
                allowed = await self._pipeline_agents(record.target.id)
        except Exception as exc:  # NATS trouble: nothing is decided without the record
            log.warning("run record not readable", run=ctx.run_id, error=str(exc))
            return CustodyRefusal("unavailable", "run_records_unavailable",
                                  f"the record of run {ctx.run_id!r} could not be read now: {exc}")
        return resolve(ctx, record, allowed_agents=allowed)

    async def record(self, run_id: str | None) -> RunRecord | None:
        if not is_record_key(run_id):
            return None
        assert run_id is not None
        cached = self._cache.get(run_id)
        if cached is not None:
            self._cache.move_to_end(run_id)
            return cached
        data = await read_record(self._records, run_id)  # a run's record, or one written before runs moved in
        if data is None:
            return None
        try:
            record = decode_record(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            log.error("a run record is unreadable", run=run_id)
            return None
        self._cache[run_id] = record
        if len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return record

    async def _pipeline_agents(self, pipeline_id: str) -> frozenset[str]:
        if self._pipelines is None:
            try:
                self._pipelines = await self._open_pipelines()
            except BucketNotFoundError:
                return frozenset()
        try:
            entry = await self._pipelines.get(pipeline_id)
        except KeyNotFoundError:
            return frozenset()
        if entry.value is None:
            return frozenset()
        try:
            document = msgspec.json.decode(entry.value)
        except msgspec.DecodeError:
            return frozenset()
        return pipeline_agents(document) if isinstance(document, dict) else frozenset()
