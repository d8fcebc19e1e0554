"""`make bench-runner`: runs/s through 1, 2 and 4 runner processes, on I/O-bound playbook
runs (one tool step that sleeps 50 ms in the echo app, through the real supervisor and gateway).

Each runner process runs at most BENCH_CONCURRENCY runs at a time (AURORA_RUNNER_CONCURRENCY,
default 4), so one runner is bound by waiting on its tool, and more runners should overlap more
of that waiting: the goal is 4 runners ≥ 3.5 × one. Runs are written straight as run records,
which are the runs (the router is not what is measured), while the runners' consumer is paused;
the clock starts when every runner holds its first runs and stops when the runners' durable has
nothing pending or unacknowledged, i.e. every run's task has settled and its record was
acknowledged. Every task is checked to have succeeded.
BENCH_RUNS_PER_RUNNER (default 300) runs per runner process, BENCH_ROUNDS (default 2).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import msgspec
import nats
from nats.aio.client import Client as NATS

from services.runner.config import RunnerConfig
from shared.clock import now_iso
from shared.contracts.envelope import EventEnvelope, Header, Source
from shared.contracts.run import METHOD_AGENT_RUN, RecordedRun, RunTarget
from shared.contracts.subjects import Subjects
from shared.contracts.task import decode_task
from shared.contracts.toolcall import ToolCallEnvelope, ToolCallRequest, encode
from shared.jetstream.kvmirror import read_all
from shared.jetstream.run_records import CREATE_ONLY, run_record_subject
from shared.jetstream.streams import run_records_bucket, tasks_bucket
from shared.nats.admin_service import admin_request
from tests.bench.common import Result, best, env_int, record
from tests.bench.resources import cpu_seconds
from tests.bench.stacks import bench_stack
from tests.harness.apps_config import ECHO
from tests.harness.broker import jetstream_time
from tests.harness.processes import ServiceProcess, process_children
from tests.harness.run_records import runs_stream_name
from tests.harness.runner_stack import stack_apps
from tests.harness.stack import StackBuilder

GOAL = 3.5
SLEEP = 0.05
AGENT = "bench"
SUBJECTS = Subjects("amp")
RUNNERS_DURABLE = RunnerConfig().durable


def run_record(n: int, tag: str) -> tuple[str, bytes]:
    run_id = f"bench-{tag}-{n:06d}"
    event = msgspec.convert({
        "header": {"method": "aurora/event", "message_id": f"evt-{tag}-{n}", "timestamp": "2026-06-19T12:00:00+08:00",
                   "source": {"app": "bench.source"}},
        "payload": {"type": "sensor.reading", "data": {"n": n}},
    }, EventEnvelope)
    header = Header(method=METHOD_AGENT_RUN, message_id=run_id, timestamp="2026-06-19T12:00:00Z",
                    source=Source(app="aurora.router"))
    record = RecordedRun(run_id=run_id, target=RunTarget(type="agent", id=AGENT), binding_id="bench",
                         event_message_id=event.header.message_id, source_app="bench.source",
                         event_at=event.header.timestamp, header=header, event=event)
    return run_id, msgspec.json.encode(record)


async def publish_runs(nc: NATS, count: int, tag: str) -> list[str]:
    js = nc.jetstream()
    bucket = run_records_bucket(SUBJECTS).name
    ids = []
    pending = []
    for n in range(count):  # each run is its record, as the router writes it (the gateway reads it too)
        run_id, data = run_record(n, tag)
        ids.append(run_id)
        pending.append(await js.publish_async(run_record_subject(bucket, run_id), data, headers=CREATE_ONLY))
    await asyncio.gather(*pending)
    return ids


async def waiting(js: Any) -> int:
    """Runs queued or in work: what the runners' durable has not acknowledged yet."""
    info = await js.consumer_info(runs_stream_name(SUBJECTS), RUNNERS_DURABLE)
    return int(info.num_pending + info.num_ack_pending)


async def queue_empty(nc: NATS, timeout: float) -> None:
    js = nc.jetstream()
    deadline = time.monotonic() + timeout
    while await waiting(js):
        if time.monotonic() > deadline:
            raise TimeoutError("the runs did not finish in time")
        await asyncio.sleep(0.02)


def cpu_by_group(groups: dict[str, list[int]]) -> dict[str, float]:
    """CPU seconds of each group of processes, their descendants (the supervisor's apps) included."""
    children = process_children()

    def tree(pid: int) -> list[int]:
        found, todo = [], [pid]
        while todo:
            current = todo.pop()
            found.append(current)
            todo.extend(children.get(current, []))
        return found

    return {name: sum(cpu_seconds(p) for pid in pids for p in tree(pid)) for name, pids in groups.items()}


async def gateway_ceiling(nc: NATS, callers: int = 16) -> float:
    """Calls/s the gateway serves of the same 50 ms tool with `callers` operator calls at once:
    the most runs/s any number of runners can reach here (one tool call per run)."""
    def request() -> bytes:
        return encode(ToolCallEnvelope(
            header=Header(method="tools/call", message_id=str(uuid.uuid4()), timestamp=now_iso(),
                          source=Source(app="bench")),
            payload=ToolCallRequest(tool=f"{ECHO}.slow", arguments={"seconds": SLEEP})))

    started = time.perf_counter()
    await asyncio.gather(*[nc.request(SUBJECTS.operator_tool_call, request(), timeout=60) for _ in range(callers)])
    return callers / (time.perf_counter() - started)


async def measure(nc: NATS, runners: int, runs: int, tag: str, concurrency: int) -> Result:
    """Every run is queued (and its record written) while the runners' consumer is paused, and
    the clock runs from the moment every runner holds its `concurrency` runs until the queue is
    empty. Queueing inside the window charged the harness's own work, which grows with the number
    of runs, to the runners. And a pull request made during a pause is not served when the pause
    ends: it waits out its expiry (up to a second) before its runner asks again, so each runner
    starts at its own moment, which the clock must not count. The result counts the runs still
    queued or in work when the clock starts."""
    js = nc.jetstream()
    stream = runs_stream_name(SUBJECTS)
    await js.pause_consumer(stream, RUNNERS_DURABLE, jetstream_time(3600))
    try:
        ids = await publish_runs(nc, runs, tag)
    finally:
        await js.resume_consumer(stream, RUNNERS_DURABLE)
    busy, busy_by = min(runs, runners * concurrency), time.monotonic() + 60
    while (await js.consumer_info(stream, RUNNERS_DURABLE)).num_ack_pending < busy:
        if time.monotonic() > busy_by:
            raise TimeoutError(f"the runners did not take {busy} runs within 60 s of the queue's resumption")
        await asyncio.sleep(0.002)
    started = time.perf_counter()
    # What an early runner finished before the others started is left out, as its time is.
    counted = await waiting(js)
    await queue_empty(nc, timeout=max(60.0, runs * SLEEP * 2))
    seconds = time.perf_counter() - started
    kv = await nc.jetstream().key_value(tasks_bucket(SUBJECTS).name)
    states = {key: decode_task(value).state for key, value in (await read_all(kv)).items() if key.startswith(
        f"bench-{tag}-")}
    wrong = {k: s for k, s in states.items() if s != "succeeded"}
    if len(states) != len(ids) or wrong:
        raise AssertionError(f"{len(states)} tasks for {len(ids)} runs; not succeeded: {list(wrong.items())[:5]}")
    return Result(f"{runners} runner{'s' if runners > 1 else ''}", counted, seconds)


async def main() -> int:
    concurrency = env_int("BENCH_CONCURRENCY", 4)
    per_runner = env_int("BENCH_RUNS_PER_RUNNER", 300)
    rounds = env_int("BENCH_ROUNDS", 2)
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as tmp:
        folder = Path(tmp)

        def base(builder: StackBuilder) -> StackBuilder:
            return (builder.apps(stack_apps(folder / "chat.jsonl")).env(AURORA_LOG_LEVEL="WARNING").supervisor()
                    .gateway(AURORA_LOG_LEVEL="INFO").router(AURORA_LOG_LEVEL="INFO"))

        with bench_stack(folder, base) as stack:
            runners: list[ServiceProcess] = []
            nc = await nats.connect(stack.url)
            await admin_request(nc, SUBJECTS, "agents", "apply", {"document": {
                "kind": "Agent", "id": AGENT, "agent_kind": "playbook", "events": ["*"], "tools": [f"{ECHO}.slow"],
                "playbook": {"steps": [{"id": "wait", "tool": f"{ECHO}.slow", "arguments": {"seconds": SLEEP}}]}}})
            ceiling = max([await gateway_ceiling(nc) for _ in range(2)])
            results: dict[int, Result] = {}
            cpu: dict[str, float] = {}
            for count in (1, 2, 4):
                while len(runners) < count:
                    runners.append(stack.running.launch(
                        "runner", f"runner-{len(runners) + 1}", AURORA_LOG_LEVEL="INFO",
                        AURORA_RUNNER_CONCURRENCY=str(concurrency)))
                for runner in runners:
                    await runner.ready(60)
                # sessions and caches warm
                await measure(nc, count, 2 * concurrency * count, f"warm{count}", concurrency)
                tag = uuid.uuid4().hex[:6]
                groups = {"runners": [r.pid for r in runners], "gateway": [stack["gateway"].pid],
                          "supervisor + echo app": [stack["supervisor"].pid],
                          "nats-server": [p for p in [stack.server.pid] if p is not None]}
                before = cpu_by_group(groups)
                measured = [await measure(nc, count, per_runner * count, f"{tag}r{r}", concurrency)
                            for r in range(rounds)]
                after = cpu_by_group(groups)
                runs_done = per_runner * count * rounds
                cpu = {name: (after[name] - before[name]) * 1000 / runs_done for name in groups}
                results[count] = best(measured)
            await nc.close()
    one, two, four = results[1], results[2], results[4]
    ratio = four.rate / one.rate
    print(f"runner benchmark: playbook runs with one {SLEEP * 1000:.0f} ms tool step, "
          f"{concurrency} concurrent runs per runner process, {os.cpu_count()} CPUs")
    for result in (one, two, four):
        print(f"  {result.name:<10} {result.count:>6,} runs  {result.seconds:7.2f} s  {result.rate:8.1f} runs/s")
    print(f"  gateway ceiling: {ceiling:.1f} calls/s of the same tool with 16 concurrent callers"
          + (" (the gateway serves these calls one at a time: no number of runners can go faster)"
             if ceiling < 2 / SLEEP else ""))
    total = sum(cpu.values())
    print("  CPU ms per run with 4 runners: " + ", ".join(f"{name} {ms:.1f}" for name, ms in cpu.items())
          + f"; {total:.1f} in all, so {os.cpu_count()} CPUs allow at most ~{(os.cpu_count() or 1) * 1000 / total:.0f}"
            " runs/s")
    print(f"  2 runners = {two.rate / one.rate:.2f} × one runner")
    record("runner", {"one_per_s": one.rate, "two_per_s": two.rate, "four_per_s": four.rate, "ratio": ratio,
                      "two_ratio": two.rate / one.rate, "goal": GOAL,
                      "cpu_ms_per_run": cpu})
    verdict = "met" if ratio >= GOAL else "NOT met"
    print(f"ratio: 4 runners = {ratio:.2f} × one runner (goal ≥ {GOAL}: {verdict})")
    return 0 if ratio >= GOAL else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
