"""The cluster chaos scenarios (tests/chaos/scenarios/cluster.py), short: a 3-node cluster under
load loses its AMP_EVENTS leader to SIGKILL, is restarted node by node, and has the network to
one node cut; nothing acknowledged is lost, nothing runs twice, no service restarts, and every
replica catches up."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chaos.model import Scenario
from tests.chaos.scenarios.cluster import SCENARIOS

SCALE = 0.25  # 4-6 s of load each; `make chaos` runs them at 1.0 (16-24 s)


# The leader kill runs in `make test`; the rolling restart and the network cut (the slowest to
# settle) in `make test-slow` and `make chaos`, which keeps the default run under ten minutes.
IN_DEFAULT_RUN = {"cluster-leader-kill"}


@pytest.mark.parametrize("scenario", [s if s.name in IN_DEFAULT_RUN else pytest.param(s, marks=pytest.mark.slow)
                                      for s in SCENARIOS], ids=[s.name for s in SCENARIOS])
async def test_cluster_scenario(scenario: Scenario, tmp_path: Path) -> None:
    outcome = await scenario.run(tmp_path, SCALE)
    print(outcome)
    assert outcome.acknowledged > 0, outcome.detail
    assert outcome.lost == 0, outcome.detail
    assert outcome.duplicated == 0, outcome.detail
    assert outcome.passed, outcome.detail
