"""The runners' back-pressure: their one durable consumer on the runs (the run records' stream)
carries `max_ack_pending` as `services/runner/stores.py` configures it (AURORA_RUNNER_MAX_ACK_PENDING, 1000 by default),
read back from the server, and the server then holds back every run past that many in flight."""

from __future__ import annotations

import uuid
from typing import Any

from nats.aio.client import Client as NATS
from nats.js.api import AckPolicy, ConsumerInfo

from services.runner.config import RunnerConfig, load_runner_settings
from services.runner.stores import runs_consumer
from shared.contracts.subjects import Subjects
from shared.jetstream.run_records import run_records_filter
from shared.jetstream.streams import run_records_bucket
from tests.harness.processes import ServiceProcess
from tests.harness.run_records import queue_run, runs_stream_name
from tests.harness.runner_stack import RunnerStack
from tests.harness.runs import RUNNER_ENV

DURABLE = RunnerConfig().durable


async def _runs_consumer_info(nc: NATS, subjects: Subjects) -> ConsumerInfo:
    info: ConsumerInfo = await nc.jetstream().consumer_info(runs_stream_name(subjects), DURABLE)
    return info


async def test_the_stack_runners_consumer_caps_runs_in_flight_at_the_default(
        stack: RunnerStack, snc: NATS, subjects: Subjects) -> None:
    info = await _runs_consumer_info(snc, subjects)
    expected = runs_consumer(load_runner_settings(RUNNER_ENV), subjects)
    assert info.stream_name == "KV_AMP_RUN_RECORDS" == runs_stream_name(subjects)
    assert info.config.max_ack_pending == expected.max_ack_pending == 1000  # no AURORA_RUNNER_MAX_ACK_PENDING
    assert info.config.ack_policy == AckPolicy.EXPLICIT and info.config.ack_wait == 3.0  # RUNNER_ENV's ack wait
    assert info.config.max_deliver == -1
    wanted = run_records_filter(run_records_bucket(subjects).name)
    assert info.config.filter_subject == wanted == "$KV.AMP_RUN_RECORDS.run.>"


async def test_a_configured_max_ack_pending_reaches_the_server_and_holds_runs_back(
        nc: NATS, subjects: Subjects, spawn: Any) -> None:
    runner: ServiceProcess = spawn("services.runner", tag="runner", AURORA_RUNNER_MAX_ACK_PENDING="3",
                                   AURORA_RUNNER_INSTANCE="bp-runner", AURORA_RUNNER_ACK_WAIT_SECONDS="30")
    await runner.ready(30)
    info = await _runs_consumer_info(nc, subjects)
    assert info.config.max_ack_pending == 3, info.config
    assert info.config.ack_wait == 30.0 and info.config.durable_name == DURABLE

    # With the runner stopped, take its place on the same durable: of five queued runs the server
    # hands out three, and the next one only once one of those is acknowledged.
    assert runner.terminate(timeout=20) == 0, runner.logs()[-3000:]  # drained and stopped, not killed
    js = nc.jetstream()
    for _ in range(5):
        run_id = f"run-{uuid.uuid4().hex[:8]}"
        await queue_run(js, subjects, b"{}", run_id=run_id)
    puller = await js.pull_subscribe_bind(DURABLE, runs_stream_name(subjects))
    first = await puller.fetch(5, timeout=1.5)
    assert len(first) == 3, [m.metadata.sequence for m in first]
    held = await _runs_consumer_info(nc, subjects)
    assert held.num_ack_pending == 3 and held.num_pending == 2
    await first[0].ack_sync()
    second = await puller.fetch(5, timeout=1.5)
    assert len(second) == 1
    assert second[0].metadata.sequence.stream not in {m.metadata.sequence.stream for m in first}
    await puller.unsubscribe()
