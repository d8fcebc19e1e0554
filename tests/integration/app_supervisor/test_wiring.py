"""The app-supervisor built by `build_app_supervisor` in this process, over a real nats-server and
a real stdio MCP app: it relays an MCP `initialize` to the app and its answer back, stops the app
when stopped, and nothing of it answers after it stopped."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError

from services.app_supervisor.startup import load_app_supervisor_settings
from services.app_supervisor.wiring import SupervisorSetup, build_app_supervisor
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from shared.wiring import Connections
from tests.harness.waiting import poll
from tests.integration.app_supervisor.helpers import (
    ECHO_APP,
    PYTHON,
    Channels,
    app_entry,
    health_record,
    initialize,
    pid_alive,
    write_config,
)


async def test_the_supervisor_is_built_in_process_relays_initialize_and_stops_whole(
        nc: NATS, subjects: Subjects, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"echo": app_entry([PYTHON, str(ECHO_APP)], package="test.echo")})
    own = load_app_supervisor_settings(config, {**os.environ, "AURORA_STOP_GRACE_SECONDS": "2"})
    channels = await Channels(nc, subjects, "test.echo").start()
    service = await build_app_supervisor(SupervisorSetup(subjects, own.apps, own.options), Connections(nc))
    assert [type(part).__name__ for part in service.order] == ["StartedBy", "SessionWatch", "Supervisor"]
    async with service:
        started = await channels.wait_state("started", 1)
        await channels.send(initialize(7))
        replies = await channels.wait(channels.replies, what="the app's answer to initialize")
        reply = json.loads(replies[0])
        assert reply["id"] == 7 and reply["result"]["serverInfo"]["name"] == "aurora-test-echo"
        [status] = await admin_request(nc, subjects, "supervisor", "status", {})
        assert status["status"] == "running" and status["pid"] == started["pid"]
    await channels.wait_state("stopped", 1)
    assert not any(part.started for part in service.order)
    record = await health_record(nc.jetstream(), subjects, "test.echo")
    assert record is not None and record["status"] == "stopped"  # the last word, kept in the apps bucket

    async def gone() -> bool:
        return not pid_alive(started["pid"])

    await poll(gone, timeout=10, what="the app's process to be gone")
    with pytest.raises(NoRespondersError):
        await nc.request(subjects.admin("supervisor", "status"), b"{}", timeout=2)
