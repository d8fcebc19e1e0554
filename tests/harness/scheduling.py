"""How `make test`'s workers share the tests out (pytest-xdist's `--dist loadscope`), so that a
stack a package shares starts once.

loadscope hands each worker whole modules; a package-scoped fixture (one running stack for every
test of the package: tests/integration/runner/conftest.py, tests/integration/mcp_edge/conftest.py
…) then started on every worker that got one of the package's modules: six times, the same stack,
for the edge's tests. The packages below are handed out whole instead: their stack starts once,
and each is still short beside a worker's share of the run. The gateway's package is not among
them: its tests take about a quarter of the run's test time, too long for one worker; its stack is shared
by the modules that land together.

The listed packages are also handed out first, longest first (runner's about 200 test-seconds):
given out last, in the order the tests are collected, the runner's took a worker two minutes
past the others.
"""

from __future__ import annotations

from xdist.scheduler import LoadScopeScheduling

# Longest first: the order they are handed out in.
ONE_UNIT = (
    "tests/integration/runner/",
    "tests/integration/mcp_edge/",
    "tests/integration/elicit/",
    "tests/integration/mcp_edge/a2a/",
    "tests/integration/mcp_gateway/a2a/",
)


def unit_of(nodeid: str) -> str:
    """The work unit of a test: its package when listed in ONE_UNIT (the longest such path), else
    its module (loadscope's own)."""
    module = nodeid.split("::", 1)[0]
    return max((package for package in ONE_UNIT if module.startswith(package)), key=len, default=module)


def handed_out_first(nodeids: list[str]) -> list[int]:
    """The order to run the collected tests in (their indexes): the listed packages' first, in
    ONE_UNIT's order, then every other test as collected."""
    def rank(index: int) -> tuple[int, int]:
        unit = unit_of(nodeids[index])
        return (ONE_UNIT.index(unit) if unit in ONE_UNIT else len(ONE_UNIT), index)

    return sorted(range(len(nodeids)), key=rank)


class PackageScheduling(LoadScopeScheduling):
    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)
