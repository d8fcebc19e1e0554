"""What a runner logs when a run fails: a fault of its own (a bug) is an error with its traceback,
each time; NATS or a stream away is no fault of the run, so those runs are said together by the
consumer loop, by reason and without tracebacks. While a stream leader was away, every run in
flight logged a traceback. Real nats-server; the executor stands in for a run that meets each."""

from __future__ import annotations

import asyncio
import logging

import pytest
from nats.aio.client import Client as NATS
from nats.js.errors import ServiceUnavailableError

from services.runner.config import RunnerConfig
from services.runner.worker import Worker
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_stream, runs_stream
from tests.harness.waiting import poll


class FailingOnce:
    """An executor whose first delivery of each run fails: `bug.*` with a bug, the rest with
    JetStream's 503; every later delivery is done."""

    def __init__(self) -> None:
        self.deliveries: dict[str, int] = {}

    async def handle_run(self, data: bytes, *, deliveries: int, stopping: asyncio.Event) -> str:
        self.deliveries[data.decode()] = deliveries
        if deliveries > 1:
            return "ack"
        if data.startswith(b"bug"):
            raise RuntimeError("a bug in the run")
        raise ServiceUnavailableError(code=503, description="no stream leader yet")


async def test_runs_meeting_nats_away_are_said_together_and_a_bug_with_its_traceback(
        nc: NATS, subjects: Subjects, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    js = nc.jetstream()
    spec = runs_stream(subjects)
    await ensure_stream(js, spec)
    executor = FailingOnce()
    # The AMP_RUNS drain (runs as messages of their own): the same loop as the run records' worker.
    worker = Worker(js, subjects, executor, RunnerConfig(durable="faults"), spec.name,  # type: ignore[arg-type]
                    legacy=True)
    await worker.start()
    names = ["bug-1", "away-1", "away-2", "away-3"]
    for name in names:
        await js.publish(subjects.run("agent", name), name.encode())
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))

    async def each_again() -> bool:
        return sorted(executor.deliveries) == sorted(names) and set(executor.deliveries.values()) == {2}

    try:
        await poll(each_again, timeout=20, what="each run delivered again and done")
    finally:
        stop.set()
        await worker.stop()
        await asyncio.wait_for(running, 10)
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    failed = [r for r in said if r.getMessage() == "run failed unexpectedly; it will be retried"]
    assert len(failed) == 1 and failed[0].exc_info and "a bug in the run" in str(failed[0].exc_info[1]), said
    retried = [r.__dict__["fields"] for r in said if r.getMessage() == "messages will be retried"]
    assert sum(f["count"] for f in retried) == 3 and all(f["error"].startswith("NATS away: ") for f in retried), said
    assert len(said) == 1 + len(retried) <= 3, [r.getMessage() for r in said]  # nothing else, no line per run
