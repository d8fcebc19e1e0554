"""The short version of `make chaos` (`make test-slow`): nats-server restarted mid-load on its
file store, and one runner of two SIGKILLed mid-load, each with a few seconds of load through
the real processes — every acknowledged input answered once, none twice, and each service says
the fault in a few lines, not a warning per retry."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.logged import warnings_logged
from tests.chaos.model import Scenario
from tests.chaos.scenarios.kills import SCENARIOS as KILLS
from tests.chaos.scenarios.nats import SCENARIOS as NATS_RESTART

SCALE = 0.3  # of the 20 s load at 10 inputs/s
# Lines at warning level or above one service may log through the fault: its own `nats
# disconnected`, the runners' development-key notice and one more. Repeats per retry (a bucket
# watch's, a reconnect attempt's, a run's) had the gateway at 6 in a nats-server restart.
SAID_PER_SERVICE = 3
SHORT = {s.name: s for s in [*NATS_RESTART, *KILLS] if s.name in ("nats-restart", "kill-runner")}


# Both run with `make test-slow` and `make chaos`: the default run keeps their guarantees through
# shorter tests of the same faults (a runner SIGKILLed mid-run, tests/e2e/test_runner_recovery.py;
# nats-server restarted under the bridge, tests/integration/event_bridge/test_bridge_resilience.py).
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SHORT))
async def test_nothing_acknowledged_is_lost_or_duplicated(tmp_path: Path, name: str) -> None:
    scenario: Scenario = SHORT[name]
    outcome = await scenario.run(tmp_path, SCALE)
    print(f"\n{outcome}")
    assert outcome.acknowledged > 0, outcome.detail
    assert outcome.lost == 0 and outcome.duplicated == 0, outcome.detail
    assert outcome.recover_s is not None, outcome.detail
    assert outcome.passed, outcome.detail
    assert len(list((tmp_path / "logs").glob("*.log"))) >= 6, "the services' logs were not where they are read"
    logged = warnings_logged(tmp_path / "logs")
    loud = {service: said for service, said in logged.items() if sum(said.values()) > SAID_PER_SERVICE}
    assert not loud, loud
