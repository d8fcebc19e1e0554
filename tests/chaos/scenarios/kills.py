"""SIGKILL of each service in turn mid-load (started again a second later, as an orchestrator
would), and of two runners at once."""

from __future__ import annotations

from pathlib import Path

from tests.chaos.kit import kill, loaded
from tests.chaos.load import LoadRun
from tests.chaos.model import Outcome, Scenario
from tests.chaos.stack import ChaosStack, StackSpec
from tests.chaos.tally import Tally

RATE, SECONDS = 10.0, 15.0


async def caught_runs(stack: ChaosStack, run: LoadRun, tally: Tally) -> tuple[list[str], str]:
    """A runner's SIGKILL must have caught runs mid-way (resumed by another runner), or the
    scenario proved nothing."""
    return ([] if tally.resumed else ["the SIGKILL caught no run mid-way"]), ""


async def kill_supervisor(workdir: Path, scale: float) -> Outcome:
    return await loaded(workdir, scale, name="kill-supervisor",
                        faults_text="SIGKILL supervisor (and its apps), 1 s down",
                        faults=kill("supervisor"), rate=RATE, seconds=SECONDS)


async def kill_gateway(workdir: Path, scale: float) -> Outcome:
    return await loaded(workdir, scale, name="kill-gateway", faults_text="SIGKILL gateway, 1 s down",
                        faults=kill("gateway"), rate=RATE, seconds=SECONDS)


async def kill_bridge(workdir: Path, scale: float) -> Outcome:
    return await loaded(workdir, scale, name="kill-bridge", faults_text="SIGKILL event-bridge, 1 s down",
                        faults=kill("bridge"), rate=RATE, seconds=SECONDS)


async def kill_router(workdir: Path, scale: float) -> Outcome:
    return await loaded(workdir, scale, name="kill-router", faults_text="SIGKILL router, 1 s down",
                        faults=kill("router"), rate=RATE, seconds=SECONDS)


async def kill_runner(workdir: Path, scale: float) -> Outcome:
    return await loaded(workdir, scale, name="kill-runner", faults_text="SIGKILL 1 of 2 runners, 1 s down",
                        faults=kill("runner-1"), checks=[caught_runs], rate=RATE, seconds=SECONDS)


async def kill_two_runners(workdir: Path, scale: float) -> Outcome:
    return await loaded(workdir, scale, name="kill-two-runners",
                        faults_text="SIGKILL 2 of 3 runners at once, 1 s down",
                        spec=StackSpec(runners=3), faults=kill("runner-1", "runner-2"),
                        checks=[caught_runs], rate=RATE, seconds=SECONDS)


SCENARIOS = [
    Scenario("kill-supervisor", kill_supervisor),
    Scenario("kill-gateway", kill_gateway),
    Scenario("kill-bridge", kill_bridge),
    Scenario("kill-router", kill_router),
    Scenario("kill-runner", kill_runner),
    Scenario("kill-two-runners", kill_two_runners),
]
