"""`make bench-compare`: what a change does to the end-to-end figures, before and after in one run.

The "before" is a git revision (BASE, default HEAD) checked out into a temporary worktree; the
"after" is this checkout as it is, uncommitted changes included. `make bench-e2e` runs on each
side in turns (BENCH_TURNS, default 3), the order swapped every turn, so a machine whose speed
drifts slows both sides alike; each run writes its figures to a file of its own
(`AURORA_BENCH_RESULTS`), never to bench/results.json. BENCH_SEQ, BENCH_BURST, BENCH_ROUNDS and
BENCH_PACED reach both sides alike.

Printed, as Markdown to paste into a change's record: each turn's CPU ms per event (all
processes, the goal's figure), events/s as a share of raw nats-py's, p50 as a multiple of raw's
and the messages stored and sent per event, for both sides; then the median over the turns of
after against before, and the lowest and highest of the turns' own ratios. On these shared
machines one pair proves little: with no change at all (BASE=HEAD, 2026-12-07 08:54 UTC) the
turns' CPU ratios ran from -23 % to +17 %. Compare a change's spread with such a run's.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.bench.common import REPO, env_int, run_benchmark

BEFORE, AFTER = "before", "after"


class CompareError(Exception):
    """The comparison could not be made; the message says what to fix."""


@dataclass(frozen=True)
class Figures:
    cpu_ms: float  # per event, every process of the stack together
    share_of_raw: float  # events/s at once, as a share of raw nats-py's
    p50_times_raw: float
    stored: float
    sent: float


# The figures compared: the field, its column's title and how a value is written.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("cpu_ms", "CPU ms per event", "{:.2f}"),
    ("share_of_raw", "events/s, share of raw's", "{:.0%}"),
    ("p50_times_raw", "p50, times raw's", "{:.2f}×"),
    ("stored", "stored per event", "{:.2f}"),
    ("sent", "sent per event", "{:.2f}"),
)


def turn_order(turns: int) -> list[str]:
    """The sides in the order they run: before then after, then after then before, and so on."""
    order: list[str] = []
    for turn in range(turns):
        order += [BEFORE, AFTER] if turn % 2 == 0 else [AFTER, BEFORE]
    return order


def figures_of(results: Mapping[str, Any], side: str) -> Figures:
    """The compared figures from a bench-e2e report (`record("e2e", …)`)."""
    try:
        e2e = results["e2e"]
        return Figures(
            cpu_ms=sum(e2e["cpu_ms_per_event"].values()),
            share_of_raw=e2e["throughput"]["ratio"],
            p50_times_raw=e2e["latency_ms"]["p50_ratio"],
            stored=e2e["messages_per_event"]["stored_total"],
            sent=e2e["messages_per_event"]["sent_total"],
        )
    except (KeyError, TypeError) as missing:
        raise CompareError(f"the {side} side's bench-e2e reported no {missing}: its tests/bench/bench_e2e.py "
                           "is older than the figures compared here; compare against a later BASE") from None


def ratios(before: Sequence[Figures], after: Sequence[Figures], field: str) -> list[float]:
    """After / before for one figure, turn by turn: each pair shares the machine's state of the moment."""
    return [getattr(a, field) / getattr(b, field) for b, a in zip(before, after, strict=True)]


def median_change(before: Sequence[Figures], after: Sequence[Figures], field: str) -> float:
    """The median over the turns of after / before for one figure."""
    return statistics.median(ratios(before, after, field))


def render(base: str, before: Sequence[Figures], after: Sequence[Figures]) -> str:
    header = "| turn | side | " + " | ".join(title for _, title, _ in COLUMNS) + " |"
    lines = [f"bench-e2e in {len(before)} turns: before = {base}, after = this checkout", "", header,
             "|" + "---|" * (len(COLUMNS) + 2)]
    for turn, pair in enumerate(zip(before, after, strict=True), start=1):
        for side, figures in zip((BEFORE, AFTER), pair, strict=True):
            cells = " | ".join(form.format(getattr(figures, field)) for field, _, form in COLUMNS)
            lines.append(f"| {turn} | {side} | {cells} |")
    changes = " | ".join(f"{median_change(before, after, field) - 1:+.1%}" for field, _, _ in COLUMNS)
    lines.append(f"| median | after against before | {changes} |")
    # The noise the median stands in: how far apart the turns' own ratios were.
    spread = " | ".join(f"{min(found) - 1:+.1%} to {max(found) - 1:+.1%}"
                        for found in (ratios(before, after, field) for field, _, _ in COLUMNS))
    lines.append(f"| turns | after against before | {spread} |")
    return "\n".join(lines)


@contextmanager
def checked_out(revision: str, repo: Path = REPO) -> Iterator[Path]:
    """`revision` in a temporary git worktree of `repo`, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="aurora-bench-base-"))
    added = subprocess.run(["git", "-C", str(repo), "worktree", "add", "--detach", "--quiet", str(folder), revision],
                           capture_output=True, text=True, check=False)
    if added.returncode != 0:
        folder.rmdir()
        raise CompareError(f"BASE={revision} could not be checked out: {added.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(folder)],
                       capture_output=True, check=False)


def run_side(tree: Path, side: str, results: Path) -> Figures:
    """bench-e2e from `tree` (its services are that tree's), its figures written to `results`."""
    results.unlink(missing_ok=True)
    status = run_benchmark("bench_e2e", results, cwd=tree)
    if status != 0 or not results.exists():
        raise CompareError(f"bench-e2e failed on the {side} side ({tree}), exit status {status}")
    return figures_of(json.loads(results.read_text()), side)


def main() -> int:
    base = os.environ.get("BASE") or "HEAD"
    turns = env_int("BENCH_TURNS", 3)
    if turns < 1:
        raise CompareError(f"BENCH_TURNS={turns}: at least one turn is needed")
    measured: dict[str, list[Figures]] = {BEFORE: [], AFTER: []}
    with checked_out(base) as before_tree, tempfile.TemporaryDirectory() as scratch:
        trees = {BEFORE: before_tree, AFTER: REPO}
        for number, side in enumerate(turn_order(turns), start=1):
            print(f"run {number}/{2 * turns}: the {side} side", flush=True)
            measured[side].append(run_side(trees[side], side, Path(scratch) / f"{side}.json"))
    print(render(base, measured[BEFORE], measured[AFTER]))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except CompareError as error:
        print(f"bench-compare: {error}", file=sys.stderr)
        sys.exit(2)
