"""A route trace computed when asked (a platform `task.*` event that no binding took stores none)
works under the router's own identity on a real nats-server with deploy/nats-auth.conf: the
router reads the events stream back with the rights it already had (stream info, message gets),
and a viewer sees the computed answer through the CLI."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from shared.contracts.subjects import Subjects
from tests.harness.cli_here import run_cli_here
from tests.harness.secure_nats import SecureNats, open_session, secure_nats
from tests.harness.stack import StackBuilder
from tests.harness.waiting import poll
from tests.unit.router.factories import event_doc

SUBJECTS = Subjects("amp")


@pytest.fixture
def secure(tmp_path: Path) -> Iterator[SecureNats]:
    with secure_nats(tmp_path, people={"vera": ["viewer"]}) as server:
        router = StackBuilder(tmp_path).broker(server.url, server.credentials).router(
            AURORA_APPS_CONFIG=str(tmp_path / "no-apps.yml"))
        with router.running():
            yield server


async def test_a_viewer_reads_a_computed_trace_under_the_real_permissions(secure: SecureNats) -> None:
    doc = event_doc("task.succeeded", app="aurora.runner", message_id="task-t9-2", data={"task_id": "t9"})
    bridge = await open_session(secure.url, "event-bridge", secure.credentials.passwords["event-bridge"])
    try:  # stored as the bridge stores the runner's task events
        await bridge.nc.jetstream().publish(SUBJECTS.event("aurora.runner", "task.succeeded"),
                                            json.dumps(doc).encode(), headers={"Nats-Msg-Id": "task-t9-2"})
    finally:
        await bridge.nc.close()
    env = {"NATS_URL": secure.url, "NATS_USER": "operator", "NATS_PASSWORD": secure.credentials.passwords["operator"]}
    done = await asyncio.to_thread(run_cli_here, ("route", "trace", "task-t9-2"), env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "route_not_found (computed now, not stored)" in done.stdout and "not stored" in done.stdout, done.stdout

    async def routed() -> bool:  # the router took the event too, and stored nothing for it
        js = (await open_session(secure.url, "operator", secure.credentials.passwords["operator"])).nc
        try:
            info = await js.jetstream().consumer_info(SUBJECTS.stream("EVENTS"), "router")
            return bool(info.num_pending == 0 and info.num_ack_pending == 0 and info.delivered.stream_seq >= 1)
        finally:
            await js.close()

    await poll(routed, what="the event routed")
    assert not [line for line in secure.violations() if "router" in line], secure.violations()
