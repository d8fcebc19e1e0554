"""Each service serves its OpenTelemetry metrics for Prometheus (`AURORA_METRICS_PORT`): after
a run through the real processes, a scrape of each one shows what it did."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from shared.contracts import mcp_relay
from shared.contracts.subjects import Subjects
from tests.harness.clients import nats_client
from tests.harness.processes import ServiceProcess
from tests.harness.runner_stack import runner_stack
from tests.harness.runs import ECHO, apply, bind, event, publish_events, settled, task_id_of
from tests.harness.stack import Stack
from tests.harness.waiting import poll, poll_sync


@pytest.fixture
def measured(tmp_path: Path) -> Iterator[tuple[Stack, dict[str, ServiceProcess]]]:
    # Port 0: each process takes a free port and logs it.
    builder = runner_stack(tmp_path, runners=1, env={"AURORA_METRICS_PORT": "0", "AURORA_METRICS_HOST": "127.0.0.1"})
    with builder.running() as stack:
        yield stack, stack.processes


def metrics_port(process: ServiceProcess) -> int:
    def logged() -> int | None:
        for line in process.logs().splitlines():
            if '"metrics serving"' in line:
                return int(json.loads(line)["port"])
        return None

    return poll_sync(logged, timeout=20, what=f"{process.module} to serve its metrics")


def scrape(process: ServiceProcess) -> str:
    return httpx.get(f"http://127.0.0.1:{metrics_port(process)}/metrics", timeout=5).text


def value(text: str, name: str, **labels: str) -> float:
    """The sample `name{labels…}` (labels matched as a subset); 0 when there is none."""
    for line in text.splitlines():
        match = re.match(rf"{re.escape(name)}\{{(.*)\}} ([0-9.e+-]+)$", line)
        if match and all(f'{k}="{v}"' in match.group(1) for k, v in labels.items()):
            return float(match.group(2))
    return 0.0


async def test_every_service_shows_what_it_did(measured: tuple[Stack, dict[str, ServiceProcess]]) -> None:
    server, processes = measured
    subjects = Subjects("amp")
    case = f"m-{uuid.uuid4().hex[:6]}"
    async with nats_client(server.url) as nc:
        await apply(nc, subjects, "agents", {
            "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["message.received"],
            "tools": [f"{ECHO}.echo"],
            "playbook": {"steps": [{"id": "look", "tool": f"{ECHO}.echo", "arguments": {"case": case}}],
                         "answer": "seen"}})
        await bind(nc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
        doc = event("message.received", {"case": case, "text": "count me"}, session_id=f"s-{case}")
        await publish_events(nc.jetstream(), subjects, [doc])
        task = await settled(nc, subjects, task_id_of(doc, f"b-{case}"))
        assert task["state"] == "succeeded", task
        restart = mcp_relay.RestartRequest(app=ECHO, reason="the metrics test restarts it")
        await nc.request(subjects.admin("supervisor", "restart"), mcp_relay.encode(restart), timeout=20)

    async def counted() -> str | None:  # the runner records the run as it settles; scrape until it shows
        text = scrape(processes["runner-1"])
        return text if value(text, "aurora_run_duration_seconds_count", agent=f"a-{case}", state="succeeded") else None

    runner = await poll(counted, timeout=20, what="the run in the runner's metrics")
    assert value(runner, "aurora_stage_messages_total", stage="runner", outcome="acked") >= 1
    assert 'aurora_consumer_lag{consumer="runner",' in runner

    gateway = scrape(processes["gateway"])
    assert value(gateway, "aurora_tool_call_duration_seconds_count", tool=f"{ECHO}.echo", status="ok") >= 1
    assert value(gateway, "aurora_tool_call_duration_seconds_count", tool="event_reply", status="ok") >= 1
    assert "aurora_approvals_pending" in gateway  # counted by the expiry sweep

    for name, stage in (("bridge", "event_bridge"), ("router", "router")):
        assert value(scrape(processes[name]), "aurora_stage_messages_total", stage=stage, outcome="acked") >= 1

    def restarted() -> bool:
        return value(scrape(processes["supervisor"]), "aurora_app_restarts_total", app=ECHO) >= 1

    poll_sync(restarted, timeout=20, what="the app restart in the supervisor's metrics")
