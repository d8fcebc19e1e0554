"""`make test`'s work units (tests/harness/scheduling.py): a package that shares one stack is one
unit, the longest listed package wins, and every other test goes with its module."""

from __future__ import annotations

from pathlib import Path

from tests.harness.scheduling import ONE_UNIT, handed_out_first, unit_of

TESTS = Path(__file__).resolve().parents[1]


def test_a_listed_package_is_one_unit_and_other_tests_go_by_module() -> None:
    assert unit_of("tests/integration/mcp_edge/test_edge_mcp.py::test_a") == "tests/integration/mcp_edge/"
    assert unit_of("tests/integration/mcp_edge/a2a/test_a2a_secure.py::test_b[x]") == \
        "tests/integration/mcp_edge/a2a/"
    assert unit_of("tests/integration/runner/test_llm.py::test_c") == "tests/integration/runner/"
    assert unit_of("tests/integration/mcp_gateway/test_calls.py::test_d") == \
        "tests/integration/mcp_gateway/test_calls.py"
    assert unit_of("tests/unit/test_module_sizes.py::test_e") == "tests/unit/test_module_sizes.py"


def test_every_listed_package_is_there_and_shares_a_stack() -> None:
    for package in ONE_UNIT:
        conftest = TESTS.parent / package / "conftest.py"
        assert 'scope="package"' in conftest.read_text(), f"{package} shares no package-scoped fixture"


def test_the_listed_packages_run_first_in_their_order_and_the_rest_as_collected() -> None:
    collected = [
        "tests/e2e/test_a.py::t1",
        "tests/integration/mcp_edge/a2a/test_x.py::t2",
        "tests/integration/mcp_edge/test_y.py::t3",
        "tests/e2e/test_a.py::t4",
        "tests/integration/runner/test_z.py::t5",
        "tests/integration/runner/test_z.py::t6",
        "tests/unit/test_u.py::t7",
    ]
    order = [collected[index].rsplit("::", 1)[1] for index in handed_out_first(collected)]
    assert order == ["t5", "t6", "t3", "t2", "t1", "t4", "t7"]
