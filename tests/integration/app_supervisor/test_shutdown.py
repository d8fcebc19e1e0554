"""Ordered shutdown (the seed's order): an app's process is stopped only after the gateway
closed its session, or after a bounded wait; SIGTERM then SIGKILL of the whole group; no
orphans even when the supervisor itself is killed; health and logs survive."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.processes import ServiceProcess, Spawn
from tests.integration.app_supervisor.helpers import (
    HERE,
    MODULE,
    PYTHON,
    SILENT_APP,
    Channels,
    Running,
    app_entry,
    health_record,
    log_records,
    pid_alive,
    poll,
    write_config,
)

STUBBORN_APP = HERE / "apps" / "stubborn_app.py"


async def _logged(supervisor: ServiceProcess, message: str, timeout: float = 10.0) -> dict[str, object]:
    async def probe() -> dict[str, object] | None:
        return next((r for r in log_records(supervisor.logs()) if r.get("msg") == message), None)

    record: dict[str, object] = await poll(probe, timeout=timeout, what=f"log {message!r}")
    return record


def _sigterm(supervisor: ServiceProcess) -> asyncio.Future[int | None]:
    """SIGTERM in a thread (the harness waits synchronously for the exit)."""
    return asyncio.ensure_future(asyncio.to_thread(supervisor.terminate, 20))


async def test_shutdown_stops_the_app_only_after_its_session_closed(relay: Running) -> None:
    channels, supervisor = relay.channels, relay.supervisor
    pid = relay.started["pid"]
    await channels.announce("connected")
    await _logged(supervisor, "gateway session connected")

    exit_code = _sigterm(supervisor)
    await _logged(supervisor, "waiting for the gateway to close the session")
    await asyncio.sleep(0.5)  # the supervisor must hold still while the session is open
    assert channels.states() == ["started"] and pid_alive(pid)

    await channels.announce("closed")
    await channels.wait_state("stopped")
    assert await exit_code == 0
    order = [(s.channel, s.data["state"]) for s in channels.seen if isinstance(s.data, dict)]
    assert order == [("proc", "started"), ("sess", "connected"), ("sess", "closed"), ("proc", "stopped")]
    assert not pid_alive(pid)


async def test_shutdown_waits_a_bounded_time_for_a_session_that_never_closes(
    nc: NATS, subjects: Subjects, spawn: Spawn, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"silent": app_entry([PYTHON, str(SILENT_APP)], package="test.silent")})
    channels = await Channels(nc, subjects, "test.silent").start()
    supervisor = spawn(MODULE, AURORA_APPS_CONFIG=str(config), AURORA_SHUTDOWN_WAIT_SECONDS="1",
                       AURORA_STOP_GRACE_SECONDS="1")
    await channels.wait_state("started", 1)
    await channels.announce("connected")
    await _logged(supervisor, "gateway session connected")

    began = time.monotonic()
    exit_code = _sigterm(supervisor)
    stopped = await channels.wait_state("stopped")
    waited = channels.seen[-1].at - began
    assert 1.0 <= waited < 4.0, waited
    assert await exit_code == 0
    assert channels.states() == ["started", "stopped"]
    assert stopped["exit_code"] == -15  # silent_app ignores the end of stdin; SIGTERM ends it
    await _logged(supervisor, "session still open after the bounded wait, stopping app anyway")


async def test_shutdown_does_not_wait_when_no_session_was_announced(relay: Running) -> None:
    """AURORA_SHUTDOWN_WAIT_SECONDS is 10 by default: stopping within 3 s proves no wait."""
    began = time.monotonic()
    exit_code = _sigterm(relay.supervisor)
    await relay.channels.wait_state("stopped", timeout=3)
    assert time.monotonic() - began < 3
    assert await exit_code == 0
    records = log_records(relay.supervisor.logs())
    assert not any(r.get("msg") == "waiting for the gateway to close the session" for r in records)


async def test_an_app_ignoring_sigterm_and_its_children_are_killed_after_the_grace_period(
    nc: NATS, subjects: Subjects, spawn: Spawn, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"stubborn": app_entry([PYTHON, str(STUBBORN_APP)],
                                                           package="test.stubborn")})
    channels = await Channels(nc, subjects, "test.stubborn").start()
    supervisor = spawn(MODULE, AURORA_APPS_CONFIG=str(config), AURORA_STOP_GRACE_SECONDS="0.5")
    started = await channels.wait_state("started", 1)
    child = json.loads((await channels.wait(channels.replies, what="child pid"))[0])["child"]
    assert pid_alive(child)

    exit_code = _sigterm(supervisor)
    stopped = await channels.wait_state("stopped")
    assert await exit_code == 0
    assert stopped["exit_code"] == -9 and stopped["generation"] == 1
    assert not pid_alive(started["pid"])
    await poll(lambda: asyncio.sleep(0, not pid_alive(child)), timeout=3, what="the app's child to be gone")
    await _logged(supervisor, "app ignored SIGTERM, killing it")

    health = await health_record(nc.jetstream(), subjects, "test.stubborn")
    assert health is not None and health["status"] == "stopped" and health["last_exit_code"] == -9


async def test_what_a_crashed_app_leaves_behind_is_killed_with_it(
    nc: NATS, subjects: Subjects, spawn: Spawn, tmp_path: Path
) -> None:
    restart = {"backoff_initial_seconds": 5, "max_restarts": 1}
    config = write_config(tmp_path, {"stubborn": app_entry([PYTHON, str(STUBBORN_APP)],
                                                           package="test.stubborn", restart=restart)})
    channels = await Channels(nc, subjects, "test.stubborn").start()
    spawn(MODULE, AURORA_APPS_CONFIG=str(config))
    await channels.wait_state("started", 1)
    child = json.loads((await channels.wait(channels.replies, what="child pid"))[0])["child"]

    await channels.send(b"exit")
    exited = await channels.wait_state("exited", 1)
    assert exited["exit_code"] == 5
    await poll(lambda: asyncio.sleep(0, not pid_alive(child)), timeout=3, what="the app's child to be gone")


async def test_a_killed_supervisor_leaves_no_orphans_and_its_health_survives(
    nc: NATS, subjects: Subjects, spawn: Spawn, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"silent": app_entry([PYTHON, str(SILENT_APP)], package="test.silent")})
    channels = await Channels(nc, subjects, "test.silent").start()
    supervisor = spawn(MODULE, AURORA_APPS_CONFIG=str(config))
    started = await channels.wait_state("started", 1)
    health = await poll(lambda: health_record(nc.jetstream(), subjects, "test.silent"), what="health")
    assert health["status"] == "running"

    supervisor.kill()  # SIGKILL: no clean-up runs in the supervisor

    # silent_app ignores the end of its stdin: only the kernel's parent-death signal ends it.
    await poll(lambda: asyncio.sleep(0, not pid_alive(started["pid"])), timeout=3, what="the app to be gone")
    after = await health_record(nc.jetstream(), subjects, "test.silent")
    assert after is not None and after["status"] == "running" and after["pid"] == started["pid"]
    assert any(r.get("msg") == "app process started" for r in log_records(supervisor.logs()))
