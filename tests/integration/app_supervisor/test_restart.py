"""Crash → restart with backoff, crash loop → gave_up, restart on request; with the lifecycle
signals, the health record, the status endpoint and the bridge's `app.*` events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import AdminRequestError, admin_request
from tests.harness.processes import Spawn
from tests.harness.stack import StackBuilder
from tests.integration.app_supervisor.helpers import (
    ECHO_APP,
    INITIALIZED,
    MODULE,
    PYTHON,
    Channels,
    app_entry,
    health_record,
    initialize,
    mcp_call,
    pid_alive,
    poll,
    stream_messages,
    write_config,
)

CRASHY = [PYTHON, "-c", "import sys, time; time.sleep(0.2); sys.stderr.write('boom\\n'); sys.exit(3)"]


async def _initialized(channels: Channels, request_id: int) -> None:
    await channels.send(initialize(request_id))
    await channels.wait(lambda: any(json.loads(r).get("id") == request_id for r in channels.replies()),
                        what=f"initialize reply {request_id}")
    await channels.send(INITIALIZED)


async def test_a_crashed_app_is_restarted_as_a_new_generation_and_relays_again(
    nc: NATS, subjects: Subjects, spawn: Spawn, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"echo": app_entry([PYTHON, str(ECHO_APP)], package="test.echo")})
    channels = await Channels(nc, subjects, "test.echo").start()
    spawn(MODULE, AURORA_APPS_CONFIG=str(config))
    first = await channels.wait_state("started", 1)
    await _initialized(channels, 1)

    await channels.send(mcp_call(2, "tools/call", {"name": "crash", "arguments": {}}))
    exited = await channels.wait_state("exited", 1)
    second = await channels.wait_state("started", 2)
    assert channels.states() == ["started", "exited", "restarting", "started"]
    assert exited["exit_code"] == 3 and exited["pid"] == first["pid"]
    assert "crash requested" in exited["reason"]
    assert second["pid"] != first["pid"] and not pid_alive(first["pid"])

    await _initialized(channels, 3)  # the relay follows the new generation

    js = nc.jetstream()
    health = await poll(lambda: health_record(js, subjects, "test.echo"), what="health")
    assert health["status"] == "running" and health["generation"] == 2 and health["restarts"] == 1
    assert health["pid"] == second["pid"] and health["last_exit_code"] == 3
    assert health["last_error"].startswith("exited with code 3; stderr:")

    async def lifecycle() -> list[Any]:
        found = await stream_messages(js, subjects.stream("SIGNALS"), "amp.sig.test_echo.")
        signals = [body for _, body in found]
        return signals if len(signals) >= 4 else []

    signals = await poll(lifecycle, what="four lifecycle signals")
    assert [s["state"] for s in signals] == [
        "process_started", "process_exited", "process_restarting", "process_started"]
    assert all(s["kind"] == "lifecycle" and s["app"] == "test.echo" for s in signals)
    assert signals[1]["exit_code"] == 3
    assert [s["detail"]["generation"] for s in signals] == [1, 1, 1, 2]


async def test_a_crash_loop_backs_off_exponentially_then_gives_up(
    nc: NATS, nats_url: str, subjects: Subjects, tmp_path: Path
) -> None:
    restart = {"backoff_initial_seconds": 0.2, "backoff_max_seconds": 0.8, "max_restarts": 4,
               "window_seconds": 60}
    config = write_config(tmp_path, {"crashy": app_entry(CRASHY, package="test.crashy", restart=restart)})
    channels = await Channels(nc, subjects, "test.crashy").start()
    # the bridge, which turns the supervisor's lifecycle signals into events
    async with StackBuilder(tmp_path).broker(nats_url).bridge().supervisor(AURORA_APPS_CONFIG=str(config)).up():
        gave_up = await channels.wait_state("gave_up", timeout=15)
        cycle = ["started", "exited", "restarting"]
        assert channels.states() == cycle * 4 + ["started", "exited", "gave_up"]
        assert [e["generation"] for e in channels.proc() if e["state"] == "started"] == [1, 2, 3, 4, 5]
        assert gave_up["generation"] == 5 and "crash loop" in gave_up["reason"]

        # The delay between `restarting` and the next `started` doubles, 0.2, 0.4, 0.8, then stays
        # capped at 0.8. A gap is never shorter than its delay (only load makes it longer, by less
        # than 0.5 s): no constant delay fits both the first gap (< 0.7) and the third (>= 0.78),
        # and an uncapped one would make the fourth 1.6.
        seen = [s for s in channels.seen if s.channel == "proc"]
        gaps = [seen[i + 1].at - seen[i].at for i, s in enumerate(seen[:-1])
                if isinstance(s.data, dict) and s.data["state"] == "restarting"]
        assert len(gaps) == 4
        for gap, delay in zip(gaps, [0.2, 0.4, 0.8, 0.8], strict=True):
            assert delay - 0.02 <= gap < delay + 0.5, gaps

        js = nc.jetstream()
        health = await poll(lambda: health_record(js, subjects, "test.crashy"), what="health")
        assert health["status"] == "gave_up" and health["generation"] == 5 and health["restarts"] == 4
        assert health["last_exit_code"] == 3 and "crash loop" in health["last_error"]
        assert "boom" in health["last_error"] and health["pid"] is None

        [status] = await admin_request(nc, subjects, "supervisor", "status")
        assert status["status"] == "gave_up" and status["name"] == "crashy"

        # Through the event-bridge, the lifecycle signals became AMP events.
        async def events() -> list[tuple[str, Any]]:
            found = await stream_messages(js, subjects.stream("EVENTS"), "amp.evt.test_crashy.")
            return found if any(s.endswith("process_gave_up") for s, _ in found) else []

        found = await poll(events, what="app.process_gave_up event")
        types = [body["payload"]["type"] for _, body in found]
        assert types.count("app.process_exited") == 5 and types.count("app.process_started") == 5
        exited = next(body for _, body in found if body["payload"]["type"] == "app.process_exited")
        assert exited["payload"]["data"]["exit_code"] == 3
        assert exited["header"]["source"] == {"app": "test.crashy", "instance": "default"}

        # An operator (or the gateway) may revive an app that was given up on.
        answer = await admin_request(nc, subjects, "supervisor", "restart",
                                     {"app": "test.crashy", "reason": "operator"})
        assert answer == {"restarted": True, "generation": 6}


async def test_restart_endpoint_replaces_a_running_process(
    nc: NATS, subjects: Subjects, spawn: Spawn, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"echo": app_entry([PYTHON, str(ECHO_APP)], package="test.echo")})
    channels = await Channels(nc, subjects, "test.echo").start()
    spawn(MODULE, AURORA_APPS_CONFIG=str(config))
    first = await channels.wait_state("started", 1)
    await _initialized(channels, 1)

    answer = await admin_request(nc, subjects, "supervisor", "restart",
                                 {"app": "test.echo", "instance": "default",
                                  "reason": "refused a second initialize"}, timeout=10)
    assert answer == {"restarted": True, "generation": 2}
    second = await channels.wait_state("started", 2)
    assert channels.states() == ["started", "exited", "restarting", "started"]
    exited = channels.proc()[1]
    assert exited["reason"] == "restart requested: refused a second initialize"
    assert not pid_alive(first["pid"]) and second["pid"] != first["pid"]
    await _initialized(channels, 2)

    [status] = await admin_request(nc, subjects, "supervisor", "status")
    assert status["generation"] == 2 and status["status"] == "running" and status["pid"] == second["pid"]

    with pytest.raises(AdminRequestError) as unknown:
        await admin_request(nc, subjects, "supervisor", "restart", {"app": "nope", "reason": "x"})
    assert unknown.value.code == "unknown_app"
    with pytest.raises(AdminRequestError) as invalid:
        await admin_request(nc, subjects, "supervisor", "restart", {"app": "test.echo"})
    assert invalid.value.code == "invalid_request"
