"""The streams, buckets and consumer a runner works with, created idempotently at start.

Runs are run records (issue 38): the runners' durable `runner` consumes the records bucket's
stream, filtered to the records that are runs (`run.<run id>`; records written before are never
run again). AMP_RUNS is no longer created; where an older deployment left one, its `runner`
durable is drained too (`legacy_runs`) until the operator removes the stream (docs/operating.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig
from nats.js.errors import NotFoundError
from nats.js.kv import KeyValue

from services.runner.config import RunnerConfig
from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.subjects import Subjects
from shared.jetstream.api_requests import patiently
from shared.jetstream.consume_loop import work_consumer
from shared.jetstream.consumers import ensure_durable
from shared.jetstream.run_records import run_records_filter
from shared.jetstream.streams import (
    agents_bucket,
    ensure_bucket,
    ensure_streams,
    fabric_streams,
    pipelines_bucket,
    run_records_bucket,
    runs_stream,
    skills_bucket,
    tasks_bucket,
    tools_bucket,
)


@dataclass(frozen=True)
class RunnerStores:
    tasks: KeyValue
    agents: KeyValue
    pipelines: KeyValue
    tools: KeyValue
    skills: KeyValue
    runs_stream: str  # the run records' stream, KV_<records bucket>
    runs_filter: str  # the records in it that are runs
    events_stream: str
    legacy_runs: str | None = None  # AMP_RUNS, where an older deployment left it: drained too


async def open_stores(js: JetStreamContext, subjects: Subjects, plan: StreamPlan = DEFAULT_PLAN) -> RunnerStores:
    await ensure_streams(js, fabric_streams(subjects), plan=plan)
    records = run_records_bucket(subjects)
    await ensure_bucket(js, records, plan=plan)
    return RunnerStores(
        tasks=await ensure_bucket(js, tasks_bucket(subjects), plan=plan),
        agents=await ensure_bucket(js, agents_bucket(subjects), plan=plan),
        pipelines=await ensure_bucket(js, pipelines_bucket(subjects), plan=plan),
        tools=await ensure_bucket(js, tools_bucket(subjects), plan=plan),
        skills=await ensure_bucket(js, skills_bucket(subjects), plan=plan),
        runs_stream=f"KV_{records.name}",
        runs_filter=run_records_filter(records.name),
        events_stream=subjects.stream("EVENTS"),
        legacy_runs=await _existing(js, runs_stream(subjects).name),
    )


async def _existing(js: JetStreamContext, stream: str) -> str | None:
    try:
        await patiently(lambda: js.stream_info(stream))
    except NotFoundError:
        return None
    return stream


def runs_consumer(config: RunnerConfig, subjects: Subjects) -> ConsumerConfig:
    """One durable pull consumer shared by every runner, on the run records that are runs.
    Delivery is unlimited (a run the runners keep failing on is failed by its task's attempt
    count, not left waiting); `max_ack_pending` caps the runs in flight across all runners
    (back-pressure). The records stay after their ack (30 days): the ack floor says what is done."""
    return work_consumer(config.durable, "runners: routed runs for agents and pipelines",
                         run_records_filter(run_records_bucket(subjects).name), ack_wait=config.ack_wait,
                         max_deliver=-1, max_ack_pending=config.max_ack_pending)


def legacy_runs_consumer(config: RunnerConfig, subjects: Subjects) -> ConsumerConfig:
    """The durable runners consumed AMP_RUNS with before issue 38, unchanged (to drain it)."""
    return work_consumer(config.durable, "runners: routed runs for agents and pipelines", subjects.runs_all,
                         ack_wait=config.ack_wait, max_deliver=-1, max_ack_pending=config.max_ack_pending)


async def ensure_runs_consumer(js: JetStreamContext, stores: RunnerStores, config: RunnerConfig,
                               subjects: Subjects) -> None:
    await ensure_durable(js, stores.runs_stream, runs_consumer(config, subjects))
    if stores.legacy_runs is not None:
        await ensure_durable(js, stores.legacy_runs, legacy_runs_consumer(config, subjects))
