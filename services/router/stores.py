"""The JetStream streams, buckets and Object Store the router works with, opened idempotently."""

from __future__ import annotations

from dataclasses import dataclass

from nats.js import JetStreamContext
from nats.js.kv import KeyValue
from nats.js.object_store import ObjectStore

from shared.config.stream_plan import DEFAULT_PLAN, StreamPlan
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import (
    agents_bucket,
    bindings_bucket,
    ensure_bucket,
    ensure_object_store,
    ensure_streams,
    fabric_streams,
    pipelines_bucket,
    routes_bucket,
    run_events_store,
    run_records_bucket,
)


@dataclass(frozen=True)
class RouterStores:
    bindings: KeyValue
    agents: KeyValue
    pipelines: KeyValue
    routes: KeyValue
    routes_bucket: str
    run_events: ObjectStore
    run_events_bucket: str
    run_records: KeyValue
    run_records_bucket: str


async def open_stores(js: JetStreamContext, subjects: Subjects, plan: StreamPlan = DEFAULT_PLAN) -> RouterStores:
    await ensure_streams(js, fabric_streams(subjects), plan=plan)  # runs are run records (no AMP_RUNS)
    routes = routes_bucket(subjects)
    events = run_events_store(subjects)
    records = run_records_bucket(subjects)
    return RouterStores(
        bindings=await ensure_bucket(js, bindings_bucket(subjects), plan=plan),
        agents=await ensure_bucket(js, agents_bucket(subjects), plan=plan),
        pipelines=await ensure_bucket(js, pipelines_bucket(subjects), plan=plan),
        routes=await ensure_bucket(js, routes, plan=plan),
        routes_bucket=routes.name,
        run_events=await ensure_object_store(js, events, plan=plan),
        run_events_bucket=events.name,
        run_records=await ensure_bucket(js, records, plan=plan),
        run_records_bucket=records.name,
    )
