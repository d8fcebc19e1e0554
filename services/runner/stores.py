"""The streams, buckets and consumer a runner works with, created idempotently at start."""

from __future__ import annotations

from dataclasses import dataclass

from nats.js import JetStreamContext
from nats.js.api import ConsumerConfig
from nats.js.kv import KeyValue

from services.runner.config import RunnerConfig
from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.subjects import Subjects
from shared.jetstream.consume_loop import work_consumer
from shared.jetstream.consumers import ensure_durable
from shared.jetstream.streams import (
    agents_bucket,
    ensure_bucket,
    ensure_streams,
    fabric_streams,
    pipelines_bucket,
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
    runs_stream: str
    events_stream: str


async def open_stores(js: JetStreamContext, subjects: Subjects, plan: StreamPlan = DEFAULT_PLAN) -> RunnerStores:
    runs = runs_stream(subjects)
    await ensure_streams(js, [*fabric_streams(subjects), runs], plan=plan)
    return RunnerStores(
        tasks=await ensure_bucket(js, tasks_bucket(subjects), plan=plan),
        agents=await ensure_bucket(js, agents_bucket(subjects), plan=plan),
        pipelines=await ensure_bucket(js, pipelines_bucket(subjects), plan=plan),
        tools=await ensure_bucket(js, tools_bucket(subjects), plan=plan),
        skills=await ensure_bucket(js, skills_bucket(subjects), plan=plan),
        runs_stream=runs.name,
        events_stream=subjects.stream("EVENTS"),
    )


def runs_consumer(config: RunnerConfig, subjects: Subjects) -> ConsumerConfig:
    """One durable pull consumer shared by every runner. Delivery is unlimited (a run the
    runners keep failing on is failed by its task's attempt count, not left in the queue);
    `max_ack_pending` caps the runs in flight across all runners (back-pressure)."""
    return work_consumer(config.durable, "runners: routed runs for agents and pipelines", subjects.runs_all,
                         ack_wait=config.ack_wait, max_deliver=-1, max_ack_pending=config.max_ack_pending)


async def ensure_runs_consumer(js: JetStreamContext, stores: RunnerStores, config: RunnerConfig,
                               subjects: Subjects) -> None:
    await ensure_durable(js, stores.runs_stream, runs_consumer(config, subjects))
