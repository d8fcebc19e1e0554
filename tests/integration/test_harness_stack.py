"""The harness's stack builder: a service counts as up when it serves (its ready file), a service
that exits instead fails the start with its log, a restarted service is not taken for up on the
file its killed run left behind, and `up()` waits without stopping the test's event loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.harness.apps_config import echo_app, write_apps
from tests.harness.stack import StackBuilder


def test_a_stack_is_up_when_each_service_serves_and_down_after(tmp_path: Path, nats_url: str) -> None:
    builder = StackBuilder(tmp_path).broker(nats_url).apps({"echo": echo_app()}).supervisor().gateway()
    with builder.running() as stack:
        gateway = stack["gateway"]
        assert gateway.alive() and gateway.ready_path.exists()
        assert '"serving"' in gateway.logs()  # the file is written once it serves, not before
    assert not gateway.alive() and not stack["supervisor"].alive()
    assert not gateway.ready_path.exists()  # removed as it stopped


def test_a_service_that_exits_fails_the_start_with_its_log(tmp_path: Path, nats_url: str) -> None:
    missing = tmp_path / "no-such-apps.yml"
    builder = StackBuilder(tmp_path).broker(nats_url).env(AURORA_APPS_CONFIG=str(missing)).gateway()
    with pytest.raises(AssertionError, match=r"gateway exited \(2\)"), builder.running():
        pass


async def test_a_restarted_service_is_not_up_on_its_killed_run_s_file(tmp_path: Path, nats_url: str) -> None:
    config = write_apps(tmp_path, {"echo": echo_app()})
    with StackBuilder(tmp_path).broker(nats_url).running() as stack:
        stack.launch("supervisor", apps=config)
        gateway = await stack.serving("gateway", apps=config)
        gateway.kill()  # SIGKILL: nothing removes its ready file
        assert gateway.ready_path.exists()
        gateway.start()
        assert not gateway.is_ready()
        await gateway.ready()


async def test_up_waits_for_each_service_while_the_test_s_event_loop_goes_on(tmp_path: Path, nats_url: str) -> None:
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0.02)

    ticking = asyncio.create_task(tick())
    try:
        builder = StackBuilder(tmp_path).broker(nats_url).apps({"echo": echo_app()}).supervisor().gateway()
        async with builder.up() as stack:
            assert all(process.is_ready() for process in stack.processes.values())
            assert ticks > 10  # a service takes a second or more to serve: the loop ran meanwhile
    finally:
        ticking.cancel()
    assert not any(process.alive() for process in stack.processes.values())
