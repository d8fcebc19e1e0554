"""The `make chaos` table: printed with rich, and written as bench/chaos.json and bench/chaos.md,
with the machine it ran on (the numbers mean little without it)."""

from __future__ import annotations

import dataclasses
import json
import os
import platform
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from rich.table import Table

from tests.chaos.logged import total
from tests.chaos.model import Outcome

COLUMNS = ("scenario", "load", "faults", "acknowledged", "lost", "duplicated", "time to recover", "warnings logged",
           "result")


def machine() -> dict[str, str]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        model = platform.processor() or "unknown"
    return {"cpus": str(os.cpu_count()), "cpu_model": model, "os": platform.platform(),
            "python": platform.python_version()}


def machine_line(host: dict[str, str]) -> str:
    return f"{host['cpus']} CPUs ({host['cpu_model']}), {host['os']}, Python {host['python']}"


def cells(outcome: Outcome) -> list[str]:
    recover = "-" if outcome.recover_s is None else f"{outcome.recover_s:.1f} s"
    return [outcome.scenario, outcome.load, outcome.faults, str(outcome.acknowledged), str(outcome.lost),
            str(outcome.duplicated), recover, str(total(outcome.logged)), "passed" if outcome.passed else "FAILED"]


def render_table(outcomes: Sequence[Outcome], host: dict[str, str]) -> Table:
    table = Table(title="make chaos", caption=machine_line(host))
    for column in COLUMNS:
        table.add_column(column, justify="right" if column in ("acknowledged", "lost", "duplicated", "warnings logged")
                         else "left")
    for outcome in outcomes:
        row = cells(outcome)
        row[-1] = "[green]passed[/green]" if outcome.passed else "[red]FAILED[/red]"
        table.add_row(*row)
    return table


def markdown(outcomes: Sequence[Outcome], host: dict[str, str], *, when: str) -> str:
    lines = [f"`make chaos` on {machine_line(host)}, {when}", "",
             "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in cells(o)) + " |" for o in outcomes]
    failed = [o for o in outcomes if not o.passed]
    if failed:
        lines += ["", "Why each failed scenario failed:", ""]
        lines += [f"- `{o.scenario}`: {o.detail.splitlines()[0] if o.detail else ''}" for o in failed]
    return "\n".join(lines) + "\n"


def write_reports(outcomes: Sequence[Outcome], host: dict[str, str], folder: Path, *,
                  seconds: float) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    document = {"machine": host, "finished": when, "seconds": round(seconds, 1),
                "passed": all(o.passed for o in outcomes),
                "scenarios": [dataclasses.asdict(o) for o in outcomes]}
    json_path, md_path = folder / "chaos.json", folder / "chaos.md"
    json_path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path.write_text(markdown(outcomes, host, when=when), encoding="utf-8")
    return json_path, md_path
