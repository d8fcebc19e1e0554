"""The runner's state machine with fake processes and a recording reporter (no OS, no NATS)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from services.app_supervisor.backoff import RestartTracker
from services.app_supervisor.config_check import LaunchSpec
from services.app_supervisor.keeper import AppKeeper, RestartRefused, describe_exit
from shared.config.appconfig import RestartPolicy
from shared.contracts.health import ProcessHealth
from shared.contracts.mcp_relay import ProcessEvent
from shared.contracts.signals import LifecycleState

SPEC = LaunchSpec(name="weather", app_id="im.polaris.weather", instance="default",
                  argv=("server",), env={}, cwd=None, program="/bin/server")


class FakeProcess:
    def __init__(self, generation: int, fail_start: bool = False) -> None:
        self.generation = generation
        self.fail_start = fail_start
        self.exit: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.stderr_tail: list[str] = []
        self.started = False
        self.stop_calls = 0

    @property
    def pid(self) -> int:
        return 1000 + self.generation

    @property
    def running(self) -> bool:
        return self.started and not self.exit.done()

    async def start(self) -> None:
        if self.fail_start:
            raise FileNotFoundError(2, "No such file or directory")
        self.started = True

    async def wait(self) -> int:
        return await asyncio.shield(self.exit)

    async def stop(self) -> None:
        if not self.exit.done():  # the keeper also stops a process that ended by itself: not counted
            self.stop_calls += 1
            self.exit.set_result(-15)

    async def stop_now(self) -> None:
        await self.stop()

    def crash(self, code: int, *stderr: str) -> None:
        self.stderr_tail.extend(stderr)
        self.exit.set_result(code)


@dataclass
class Recorder:
    reports: list[tuple[ProcessEvent, ProcessHealth, LifecycleState | None, dict[str, Any]]] = field(
        default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def report(self, event: ProcessEvent, health: ProcessHealth, signal: LifecycleState | None,
                     detail: dict[str, Any]) -> None:
        self.reports.append((event, health, signal, detail))
        self.changed.set()

    def states(self) -> list[str]:
        return [event.state for event, *_ in self.reports]

    async def until(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(2):
            while not predicate():
                self.changed.clear()
                await self.changed.wait()


@dataclass
class Harness:
    runner: AppKeeper
    recorder: Recorder
    processes: list[FakeProcess]

    async def started(self, generation: int) -> FakeProcess:
        await self.recorder.until(lambda: any(
            event.state == "started" and event.generation == generation
            for event, *_ in self.recorder.reports))
        return self.processes[generation - 1]


def harness(fail_starts: tuple[int, ...] = (), **policy: float) -> Harness:
    settings = {"backoff_initial_seconds": 0.01, "backoff_max_seconds": 0.02, "max_restarts": 2,
                "window_seconds": 60.0, **policy}
    recorder = Recorder()
    processes: list[FakeProcess] = []

    def new_process(spec: LaunchSpec, generation: int) -> FakeProcess:
        processes.append(FakeProcess(generation, generation in fail_starts))
        return processes[-1]

    runner = AppKeeper(SPEC, RestartTracker(RestartPolicy.model_validate(settings), asyncio.get_running_loop().time),
                       recorder, new_process, command=["server"])
    return Harness(runner, recorder, processes)


async def test_a_crash_is_reported_then_restarted_as_the_next_generation() -> None:
    h = harness()
    await h.runner.start()
    (await h.started(1)).crash(3, "Traceback", "ValueError: boom")
    await h.started(2)
    assert h.recorder.states() == ["started", "exited", "restarting", "started"]
    exited, health, signal, _ = h.recorder.reports[1]
    assert (exited.generation, exited.exit_code, exited.pid, signal) == (1, 3, 1001, "process_exited")
    assert health.status == "exited" and health.last_error == (
        "exited with code 3; stderr: Traceback | ValueError: boom")
    _, _, signal, detail = h.recorder.reports[2]
    assert signal == "process_restarting" and detail == {"delay_seconds": 0.01, "attempt": 1}
    started, health, _, _ = h.recorder.reports[3]
    assert (started.generation, started.pid, health.status, health.restarts) == (2, 1002, "running", 1)
    await h.runner.stop()


async def test_a_crash_loop_gives_up_and_a_restart_request_revives_it() -> None:
    h = harness(max_restarts=1)
    await h.runner.start()
    (await h.started(1)).crash(1)
    (await h.started(2)).crash(1)
    await h.recorder.until(lambda: "gave_up" in h.recorder.states())
    assert h.runner.health().status == "gave_up" and h.runner.health().pid is None
    assert await h.runner.restart("operator", timeout=2) == 3
    assert h.recorder.states()[-2:] == ["restarting", "started"]
    (await h.started(3)).crash(1)  # the crash history was forgotten: restarted, not given up
    await h.started(4)
    await h.runner.stop()


async def test_stop_after_giving_up_keeps_gave_up_in_health() -> None:
    h = harness(max_restarts=0)
    await h.runner.start()
    (await h.started(1)).crash(7)
    await h.recorder.until(lambda: "gave_up" in h.recorder.states())
    await h.runner.stop()
    event, health, signal, _ = h.recorder.reports[-1]
    assert event.state == "stopped" and health.status == "gave_up" and signal is None
    assert health.last_exit_code == 7


async def test_a_requested_restart_skips_the_backoff_and_the_crash_count() -> None:
    h = harness(max_restarts=0, backoff_initial_seconds=60, backoff_max_seconds=60)
    await h.runner.start()
    first = await h.started(1)
    assert await h.runner.restart("refused a second initialize", timeout=2) == 2
    assert first.stop_calls == 1
    assert h.recorder.states() == ["started", "exited", "restarting", "started"]
    assert h.recorder.reports[1][0].reason == "restart requested: refused a second initialize"
    assert h.recorder.reports[2][3] == {"delay_seconds": 0.0}
    (await h.started(2)).crash(1)  # max_restarts=0: a real crash still gives up
    await h.recorder.until(lambda: "gave_up" in h.recorder.states())
    await h.runner.stop()


async def test_a_restart_request_during_the_backoff_starts_at_once() -> None:
    h = harness(backoff_initial_seconds=60, backoff_max_seconds=60)
    await h.runner.start()
    (await h.started(1)).crash(1)
    await h.recorder.until(lambda: "restarting" in h.recorder.states())
    assert await h.runner.restart("now please", timeout=1) == 2
    assert h.recorder.states() == ["started", "exited", "restarting", "started"]
    await h.runner.stop()


async def test_a_process_that_cannot_start_counts_as_a_crash() -> None:
    h = harness(fail_starts=(2,))
    await h.runner.start()
    (await h.started(1)).crash(1)
    await h.started(3)
    assert h.recorder.states() == ["started", "exited", "restarting", "exited", "restarting", "started"]
    failed = h.recorder.reports[3]
    assert failed[0].exit_code is None and failed[0].pid is None
    assert failed[0].reason is not None and failed[0].reason.startswith("could not start ['server']")
    await h.runner.stop()


async def test_draining_means_an_exit_is_final_and_restarts_are_refused() -> None:
    h = harness()
    await h.runner.start()
    (await h.started(1))
    h.runner.drain()
    with pytest.raises(RestartRefused):
        await h.runner.restart("x", timeout=1)
    h.processes[0].crash(2)
    await h.recorder.until(lambda: "exited" in h.recorder.states())
    await h.runner.stop()
    assert h.recorder.states() == ["started", "exited", "stopped"]
    assert h.recorder.reports[-1][1].status == "stopped" and len(h.processes) == 1


async def test_stop_stops_the_running_process_and_reports_it() -> None:
    h = harness()
    await h.runner.start()
    first = await h.started(1)
    await h.runner.stop()
    await h.runner.stop()  # idempotent
    assert first.stop_calls == 1
    event, health, signal, _ = h.recorder.reports[-1]
    assert (event.state, event.exit_code, event.pid, signal) == ("stopped", -15, 1001, "process_exited")
    assert (health.status, health.pid, health.last_exit_code) == ("stopped", None, -15)
    assert h.recorder.states() == ["started", "stopped"]


def test_describe_exit() -> None:
    assert describe_exit(3, []) == "exited with code 3"
    assert describe_exit(-9, ["a", "b", "c", "d"]) == "killed by signal SIGKILL; stderr: b | c | d"
    assert describe_exit(None, []) == "did not start"
    assert len(describe_exit(1, ["x" * 5000])) == 1000
