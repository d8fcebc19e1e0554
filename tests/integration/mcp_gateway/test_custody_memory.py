"""Custody's run-record cache stays bounded under the agent path's load (`make soak`'s finding).

Every agent call names a new run, and the gateway keeps its record decoded (docs/benchmarks.md:
4,096 records, 5 MiB, still filling minutes after the soak's warm-up). Here, against a real
nats-server and the run-records bucket as the router writes it: after a warm-up longer than the
bound, more calls for new runs leave the cache exactly as large; the records it holds are the
latest runs' (answered with the bucket emptied of them), and an evicted run is read again.
"""

from __future__ import annotations

import asyncio
import functools

from nats.aio.client import Client as NATS

from services.mcp_gateway.calls.custody import RECORD_CACHE_SIZE, Custody, CustodyRefusal
from shared.contracts.run import RunRecord
from shared.contracts.subjects import Subjects
from shared.contracts.toolcall import ToolCallContext
from shared.jetstream.streams import ensure_bucket, pipelines_bucket, run_records_bucket
from tests.harness.run_records import dispatched, run_context

AGENT = "mem-agent"


async def runs(nc: NATS, subjects: Subjects, count: int) -> list[RunRecord]:
    """`count` runs of AGENT recorded as dispatched, each with its own run id."""
    recorded: list[RunRecord] = []
    for start in range(0, count, 50):
        recorded += await asyncio.gather(*(dispatched(nc, subjects, agent=AGENT)
                                           for _ in range(min(50, count - start))))
    return recorded


async def called(custody: Custody, records: list[RunRecord]) -> None:
    """One agent-path call's custody step per record: each must act for its own run."""
    for record in records:
        acting = await custody.context_for(ToolCallContext(**run_context(record)))
        assert not isinstance(acting, CustodyRefusal), acting
        assert acting.run_id == record.run_id


async def test_new_runs_do_not_grow_the_record_cache(nc: NATS, subjects: Subjects) -> None:
    js = nc.jetstream()
    kv = await ensure_bucket(js, run_records_bucket(subjects))
    custody = Custody(kv, functools.partial(js.key_value, pipelines_bucket(subjects).name))
    warm_up = await runs(nc, subjects, RECORD_CACHE_SIZE + 20)
    await called(custody, warm_up)
    after_warm_up = custody.cached
    assert after_warm_up > 0

    more = await runs(nc, subjects, RECORD_CACHE_SIZE + 20)
    await called(custody, more)
    assert custody.cached == after_warm_up <= RECORD_CACHE_SIZE, (
        f"{len(more)} calls for new runs grew the run-record cache from {after_warm_up} to {custody.cached}")

    # Still a cache: the latest run is answered with its record gone from the bucket ...
    await kv.delete(more[-1].run_id)
    assert not isinstance(await custody.context_for(ToolCallContext(**run_context(more[-1]))), CustodyRefusal)
    # ... and a run evicted long ago is read from the bucket again (gone there: not dispatched).
    await kv.delete(warm_up[0].run_id)
    refused = await custody.context_for(ToolCallContext(**run_context(warm_up[0])))
    assert isinstance(refused, CustodyRefusal) and refused.reason == "unknown_run"
