"""`make bench-compare`: the sides' turns, the figures read from each run's report, the table and
the checkout of the "before" side."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.bench.compare_e2e import (
    AFTER,
    BEFORE,
    CompareError,
    Figures,
    checked_out,
    figures_of,
    median_change,
    render,
    turn_order,
)


def report(cpu: dict[str, float], *, share: float = 0.25, p50: float = 2.9, stored: float = 10.0,
           sent: float = 24.4) -> dict[str, Any]:
    return {"e2e": {"cpu_ms_per_event": cpu, "throughput": {"ratio": share, "per_s": 600, "raw_per_s": 2400},
                    "latency_ms": {"p50_ratio": p50, "p50": 4.2},
                    "messages_per_event": {"stored_total": stored, "sent_total": sent}}}


def test_each_turn_swaps_which_side_runs_first() -> None:
    assert turn_order(3) == [BEFORE, AFTER, AFTER, BEFORE, BEFORE, AFTER]


def test_the_cpu_compared_is_every_process_together() -> None:
    figures = figures_of(report({"bridge": 0.5, "router": 0.25, "nats-server": 1.25}), BEFORE)
    assert figures == Figures(cpu_ms=2.0, share_of_raw=0.25, p50_times_raw=2.9, stored=10.0, sent=24.4)


def test_a_report_without_a_figure_names_the_side_and_what_is_missing() -> None:
    old = report({"bridge": 0.5})
    del old["e2e"]["messages_per_event"]["sent_total"]
    with pytest.raises(CompareError, match="before side's bench-e2e reported no 'sent_total'"):
        figures_of(old, BEFORE)


def test_the_change_is_the_median_of_each_turns_own_ratio() -> None:
    def cpu(value: float) -> Figures:
        return Figures(cpu_ms=value, share_of_raw=0.2, p50_times_raw=3.0, stored=10, sent=24)

    # The sides' own medians (4.0 and 4.4) would say +10 %; turn by turn the after side was 20 %
    # cheaper, 10 % dearer and 10 % cheaper than the before side run beside it.
    before = [cpu(3.0), cpu(4.0), cpu(5.0)]
    after = [cpu(2.4), cpu(4.4), cpu(4.5)]
    assert median_change(before, after, "cpu_ms") == pytest.approx(0.9)


def test_the_table_has_both_sides_of_every_turn_and_the_median_change() -> None:
    before = [Figures(4.0, 0.20, 3.0, 10.0, 24.0), Figures(5.0, 0.20, 3.0, 10.0, 24.0)]
    after = [Figures(3.6, 0.22, 3.0, 9.0, 20.0), Figures(4.5, 0.24, 3.0, 9.0, 20.0)]
    table = render("main", before, after).splitlines()
    assert table[0] == "bench-e2e in 2 turns: before = main, after = this checkout"
    assert table[5] == "| 1 | after | 3.60 | 22% | 3.00× | 9.00 | 20.00 |"
    assert table[-2] == "| median | after against before | -10.0% | +15.0% | +0.0% | -10.0% | -16.7% |"
    assert table[-1] == ("| turns | after against before | -10.0% to -10.0% | +10.0% to +20.0% | +0.0% to +0.0% "
                         "| -10.0% to -10.0% | -16.7% to -16.7% |")
    assert len(table) == 4 + 2 * 2 + 2


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "repo"
    folder.mkdir()
    git("init", "--quiet", cwd=folder)
    for version in ("one", "two"):
        (folder / "version.txt").write_text(version)
        git("add", "version.txt", cwd=folder)
        git("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "--quiet", "-m", version, cwd=folder)
    return folder


def test_the_before_side_is_the_revision_checked_out_and_removed_afterwards(repo: Path) -> None:
    with checked_out("HEAD~1", repo) as tree:
        assert (tree / "version.txt").read_text() == "one"
        assert (repo / "version.txt").read_text() == "two"  # the checkout itself is left as it was
    assert not tree.exists()
    assert git("worktree", "list", "--porcelain", cwd=repo).count("worktree ") == 1


def test_a_revision_that_does_not_exist_is_a_clear_error(repo: Path) -> None:
    with (pytest.raises(CompareError, match="BASE=no-such-branch could not be checked out"),
          checked_out("no-such-branch", repo)):
        pass
    assert git("worktree", "list", "--porcelain", cwd=repo).count("worktree ") == 1
