"""`python -m tests.chaos [-k NAME] [--scale S]`: every scenario of `tests/chaos/scenarios/`, one
after another, then one table (printed, and written to bench/chaos.json and bench/chaos.md).
Exits 1 when any scenario failed."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import importlib
import pkgutil
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

from tests.chaos import scenarios as scenarios_package
from tests.chaos.logged import summary, warnings_logged
from tests.chaos.model import Outcome, Scenario
from tests.chaos.report import machine, render_table, write_reports

REPO = Path(__file__).resolve().parents[2]


def discover() -> list[Scenario]:
    """Every `SCENARIOS` list of every module in tests/chaos/scenarios, in module-name order."""
    found: list[Scenario] = []
    for info in sorted(pkgutil.iter_modules(scenarios_package.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{scenarios_package.__name__}.{info.name}")
        found.extend(getattr(module, "SCENARIOS", []))
    return found


def select(all_scenarios: list[Scenario], patterns: list[str]) -> list[Scenario]:
    if not patterns:
        return all_scenarios
    return [s for s in all_scenarios if any(p in s.name for p in patterns)]


async def run_all(chosen: list[Scenario], workroot: Path, scale: float, console: Console) -> list[Outcome]:
    outcomes = []
    for scenario in chosen:
        started = time.monotonic()
        console.print(f"[bold]{scenario.name}[/bold] …")
        workdir = workroot / scenario.name
        workdir.mkdir(parents=True, exist_ok=True)
        try:
            outcome = await scenario.run(workdir, scale)
        except Exception as exc:  # a scenario's own bug is a failed row, not the end of the suite
            outcome = Outcome(scenario=scenario.name, load="-", faults="-", acknowledged=0, lost=0, duplicated=0,
                              recover_s=None, passed=False, detail=f"error: {exc!r}; files in {workdir}")
        outcome = dataclasses.replace(outcome, logged=warnings_logged(workdir / "logs"))
        verdict = "[green]passed[/green]" if outcome.passed else "[red]FAILED[/red]"
        console.print(f"  {verdict} in {time.monotonic() - started:.0f}s: {outcome.detail}")
        logged = summary(outcome.logged).replace("\n", "\n    ")
        console.print(f"  warnings and errors the services logged:\n    {logged}", markup=False)
        if outcome.passed:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            console.print(f"  logs and store kept in {workdir}")
        outcomes.append(outcome)
    return outcomes


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.chaos", description=__doc__)
    parser.add_argument("-k", action="append", default=[], metavar="NAME",
                        help="run only the scenarios whose name contains NAME (repeatable)")
    parser.add_argument("--scale", type=float, default=1.0, help="load duration factor (1.0 = full)")
    parser.add_argument("--out", type=Path, default=REPO / "bench", help="where chaos.json and chaos.md go")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)
    console = Console(width=200)
    chosen = select(discover(), args.k)
    if args.list or not chosen:
        for scenario in chosen:
            console.print(scenario.name)
        if not chosen:
            console.print(f"no scenario matches {args.k}", style="red")
            return 2
        return 0
    # SIGTERM stops the run like Ctrl-C: the running scenario stops what it started.
    signal.signal(signal.SIGTERM, _interrupted)
    started = time.monotonic()
    # A failed scenario's logs and store are kept for a look; a passed one's are removed.
    workroot = Path(tempfile.mkdtemp(prefix="aurora-chaos-"))
    outcomes = asyncio.run(run_all(chosen, workroot, args.scale, console))
    host = machine()
    console.print(render_table(outcomes, host))
    json_path, md_path = write_reports(outcomes, host, args.out, seconds=time.monotonic() - started)
    console.print(f"written: {json_path}, {md_path}")
    return 0 if all(o.passed for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
