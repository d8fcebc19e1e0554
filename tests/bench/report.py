"""`make bench`: every benchmark, one after another, into one report.

Each benchmark runs as its own process (as `make bench-<name>` runs it) and adds its figures
to `bench/results.json`; this then writes `bench/results.md` (the table docs/benchmarks.md shows, with
the machine it came from) and `bench/results.png` (each stage's figure beside its baseline
from the same run). `python -m tests.bench.report --only e2e,gateway` runs some of them;
`--render` only redraws the table and chart from the existing results.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tests.bench.common import REPO, run_benchmark

OUT = REPO / "bench"
BENCHMARKS = ("startup", "bridge", "router", "gateway", "runner", "e2e", "floor")


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), "")
    # The load when the run began: on a shared machine it says how far to trust absolute figures.
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"cpus": os.cpu_count(), "cpu": model, "os": platform.platform(), "python": platform.python_version(),
            "at": datetime.now(UTC).isoformat(timespec="minutes"), "load": load}


def run_all(names: list[str], results: Path) -> list[str]:
    """Run each benchmark; the names of those that failed (their goal missed, or an error)."""
    failed = []
    for name in names:
        print(f"=== {name}", flush=True)
        if run_benchmark(f"bench_{name}", results) != 0:
            failed.append(name)
    return failed


def _times(ratio: float) -> str:
    """A ratio to read at a glance; below 0.1 (the baseline had a stall) it keeps two decimals."""
    return f"{ratio:.1f}×" if ratio >= 0.1 else f"{ratio:.2f}×"


def _verdict(met: bool) -> str:
    """Said beside each goal, so a figure rounded to the goal's digits cannot pass for it."""
    return "met" if met else "NOT met"


# Issue 38's end-to-end goals, judged on the figures of one run.
E2E_THROUGHPUT_GOAL = 0.25  # Aurora's events/s at least this share of raw's
E2E_P50_GOAL = 3.0  # Aurora's p50 at most this many times raw's
E2E_CPU_GOAL = 3.0  # CPU ms per event, all processes, at most
E2E_STORED_GOAL = 10.0  # stored messages per playbook event, at most: half of the 20 counted first


def _message_rows(unit: str, counted: dict[str, Any], stored_goal: float | None = None
                  ) -> list[tuple[str, str, str, str]]:
    """Messages stored (by stream) and sent (by process), counted in the run (tests/bench/counting.py)."""
    stored = counted["stored_total"]
    verdict = "-" if stored_goal is None else f"goal ≤ {stored_goal:g}: {_verdict(stored <= stored_goal)}"
    return [(f"messages stored {unit}", f"{stored:.2f}",
             ", ".join(f"{k} {v:.2f}" for k, v in counted["stored"].items()), verdict),
            (f"messages sent {unit}", f"{counted['sent_total']:.2f}",
             ", ".join(f"{k} {v:.2f}" for k, v in counted["sent"].items()), "-")]


def rows(results: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(stage, Aurora, baseline from the same run, ratio) for every figure there is."""
    found: list[tuple[str, str, str, str]] = []
    if e2e := results.get("e2e"):
        lat, thr = e2e["latency_ms"], e2e["throughput"]
        found.append(("end to end, event → reply: p50 latency", f"{lat['p50']:.2f} ms",
                      f"{lat['raw_p50']:.2f} ms (raw nats-py, same hops)",
                      f"{_times(lat['p50_ratio'])} (goal ≤ {E2E_P50_GOAL:g}×: "
                      f"{_verdict(lat['p50_ratio'] <= E2E_P50_GOAL)})"))
        found.append(("end to end: p99 latency", f"{lat['p99']:.2f} ms", f"{lat['raw_p99']:.2f} ms",
                      _times(lat['p99'] / lat['raw_p99'])))
        if "paused_slowest" in lat:  # one at a time after pauses of up to a second, as users send them
            raw_paused, ratio = "-", "-"
            if "raw_paused_p50" in lat:  # the baseline after the same pauses
                raw_paused = f"{lat['raw_paused_p50']:.2f} ms, {lat['raw_paused_slowest']:.2f} ms"
                ratio = f"p50 {_times(lat['paused_p50'] / lat['raw_paused_p50'])}"
            found.append((f"end to end after pauses of up to 1 s ({lat['paused_events']} events): p50, slowest",
                          f"{lat['paused_p50']:.2f} ms, {lat['paused_slowest']:.2f} ms", raw_paused, ratio))
        found.append(("end to end: events/s", f"{thr['per_s']:,.0f}", f"{thr['raw_per_s']:,.0f}",
                      f"{thr['ratio']:.0%} (goal ≥ {E2E_THROUGHPUT_GOAL:.0%}: "
                      f"{_verdict(thr['ratio'] >= E2E_THROUGHPUT_GOAL)})"))
        cpu = e2e["cpu_ms_per_event"]
        by_process = ", ".join(f"{k} {v:.2f}" for k, v in cpu.items())
        verdict = f"goal ≤ {E2E_CPU_GOAL:g} ms: {_verdict(sum(cpu.values()) <= E2E_CPU_GOAL)}"
        if raw_cpu := e2e.get("raw_cpu_ms_per_event"):  # measured over each side's own stretches
            raw = ", ".join(f"{k} {v:.2f}" for k, v in raw_cpu.items())
            by_process = f"{sum(raw_cpu.values()):.2f} ({raw}); Aurora: {by_process}"
            verdict = f"{_times(sum(cpu.values()) / sum(raw_cpu.values()))}; {verdict}"
        found.append(("CPU ms per event, all processes", f"{sum(cpu.values()):.2f}", by_process, verdict))
        if by_mode := e2e.get("cpu_ms_per_event_by_mode"):  # one at a time, and at once, apart
            found.append(("CPU ms per event: " + ", ".join(by_mode),
                          _figures(side["aurora"] for side in by_mode.values()),
                          _figures(side["raw"] for side in by_mode.values()),
                          ", ".join(_times(side["aurora"] / side["raw"]) for side in by_mode.values())))
        if counted := e2e.get("messages_per_event"):
            found += _message_rows("per event", counted, E2E_STORED_GOAL)
        if call := e2e.get("tool_call"):
            call_cpu = call["cpu_ms"]
            found.append((f"CPU ms per tool call ({call['tool']}), all processes", f"{sum(call_cpu.values()):.2f}",
                          ", ".join(f"{k} {v:.2f}" for k, v in call_cpu.items()), "-"))
            found += _message_rows(f"per tool call ({call['tool']})", call["messages"])
        rss = e2e["rss_mib"]
        found.append(("RSS MiB idle → loaded", ", ".join(
            f"{k} {rss['idle'][k]:.0f}→{rss['loaded'][k]:.0f}" for k in rss["idle"]), "-", "-"))
    if floor := results.get("floor"):
        found += _floor_rows(floor)
    for name, label, unit in (("bridge", "event-bridge: signals/s", "raw nats-py fetch + publish + ack"),
                              ("router", "router: events/s, 50 bindings", "raw nats-py pull + publish + ack")):
        if figures := results.get(name):
            found.append((label, f"{figures['per_s']:,.0f}", f"{figures['raw_per_s']:,.0f} ({unit})",
                          f"{figures['ratio']:.1%} (goal ≥ {figures['goal']:.0%}: "
                          f"{_verdict(figures['ratio'] >= figures['goal'])})"))
    if gw := results.get("gateway"):
        seq, conc = gw["sequential_p50_ms"], gw["concurrent"]
        found.append(("gateway: sequential p50", f"{seq['gateway']:.2f} ms", f"{seq['direct']:.2f} ms (MCP client)",
                      f"{seq['ratio']:.2f}×; {seq['own_cost_above_floor']:.2f} ms above the 2-round-trip floor"))
        found.append((f"gateway: {gw['callers']} callers, calls/s", f"{conc['gateway_per_s']:,.0f}",
                      f"{conc['direct_per_s']:,.0f}", f"{conc['ratio']:.0%}"))
        if "platform_cpu_ms_per_call" in gw:
            found.append(("gateway: own cost above the floor, p50", f"{seq['own_cost_above_floor']:.2f} ms",
                          "direct p50 + 2 NATS round trips",
                          f"goal ≤ {seq['own_cost_goal']} ms: "
                          f"{_verdict(seq['own_cost_above_floor'] <= seq['own_cost_goal'])}"))
            found.append(("gateway + supervisor + nats-server: CPU ms per call",
                          f"{gw['platform_cpu_ms_per_call']:.2f}",
                          "each round: " + ", ".join(f"{v:.2f}" for v in gw["platform_cpu_each_round"]),
                          f"goal ≤ {gw['platform_cpu_goal']} ms: "
                          f"{_verdict(gw['platform_cpu_ms_per_call'] <= gw['platform_cpu_goal'])}"))
        cpu = gw.get("cpu_ms_per_call") or {}
        for run_name, usage in cpu.items():
            if "gateway" in run_name:
                found.append(("gateway: CPU ms per call", f"{sum(usage.values()):.2f}",
                              ", ".join(f"{k} {v:.2f}" for k, v in usage.items()), "-"))
    if runner := results.get("runner"):
        if "two_per_s" in runner:
            found.append(("runner: runs/s, 2 processes vs 1", f"{runner['two_per_s']:,.1f}",
                          f"{runner['one_per_s']:,.1f}", f"{runner['two_ratio']:.2f}×"))
        found.append(("runner: runs/s, 4 processes vs 1", f"{runner['four_per_s']:,.1f}", f"{runner['one_per_s']:,.1f}",
                      f"{runner['ratio']:.2f}× (goal ≥ {runner['goal']}×: "
                      f"{_verdict(runner['ratio'] >= runner['goal'])})"))
    if startup := results.get("startup"):
        found.append(("`aurora --help` start-up", f"{startup['cpu_s']:.3f} s CPU", f"{startup['wall_s']:.3f} s wall",
                      f"goal ≤ {startup['goal_s']} s: {_verdict(startup['cpu_s'] <= startup['goal_s'])}"))
    return found


def _floor_rows(floor: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """bench-floor: Aurora's messages made by raw nats-py in five processes, beside raw and Aurora
    from the same run (tests/bench/bench_floor.py)."""
    raw, apart, aurora = floor["raw"], floor["processes"], floor["aurora"]
    label = "Aurora's messages in raw nats-py, 5 processes"
    rows = [
        (f"{label}: events/s", f"{apart['per_s']:,.0f}", f"{raw['per_s']:,.0f} (raw nats-py, same hops)",
         f"{apart['per_s'] / raw['per_s']:.0%}; Aurora in the same run {aurora['per_s'] / raw['per_s']:.0%}"),
        (f"{label}: p50 latency", f"{apart['p50_ms']:.2f} ms", f"{raw['p50_ms']:.2f} ms",
         f"{_times(apart['p50_ms'] / raw['p50_ms'])}; "
         f"Aurora in the same run {_times(aurora['p50_ms'] / raw['p50_ms'])}"),
        (f"{label}: CPU ms per event", f"{apart['cpu_ms_total']:.2f}",
         ", ".join(f"{k} {v:.2f}" for k, v in apart["cpu_ms_per_event"].items()),
         f"Aurora in the same run {aurora['cpu_ms_total']:.2f} ms"),
    ]
    if by_mode := apart.get("cpu_ms_total_by_mode"):  # one at a time, and at once, apart
        rows.append((f"{label}: CPU ms per event: " + ", ".join(by_mode), _figures(by_mode.values()),
                     f"{_figures(raw['cpu_ms_total_by_mode'].values())} (raw nats-py)",
                     f"Aurora in the same run {_figures(aurora['cpu_ms_total_by_mode'].values())}"))
    return rows


def _figures(ms: Iterable[float]) -> str:
    return ", ".join(f"{each:.2f}" for each in ms)


# A whole `make bench` takes well under this; a figure recorded later was measured on its own.
SAME_RUN = timedelta(hours=2)


def _after_the_run(at: str, began: str | None) -> bool:
    return began is not None and datetime.fromisoformat(at) - datetime.fromisoformat(began) > SAME_RUN


def markdown(results: dict[str, Any]) -> str:
    info = results.get("machine", {})
    lines = [f"Measured {info.get('at', '?')} on {info.get('cpus', '?')} CPUs ({info.get('cpu') or 'unknown CPU'}), "
             f"{info.get('os', '')}, Python {info.get('python', '')}"
             + (f"; load average {info['load']:.1f} when it began" if info.get("load") is not None else "") + ".", "",
             "| stage | Aurora | baseline (same run) | ratio |", "|---|---|---|---|"]
    later = [f"{name} at {figures['at']}" + (f" (load {figures['load']:.1f})" if figures.get("load") is not None
                                             else "")
             for name, figures in results.items()
             if name != "machine" and isinstance(figures, dict) and figures.get("at")
             and _after_the_run(figures["at"], info.get("at"))]
    if later:
        lines[1:1] = ["", "Measured alone, into this report later: " + ", ".join(later) + "."]
    lines += [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in rows(results)]
    return "\n".join(lines) + "\n"


def chart(results: dict[str, Any], path: Path) -> None:
    """Throughput and latency per stage, each beside its baseline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = []
    if e2e := results.get("e2e"):
        pairs.append(("end to end\nevents/s", e2e["throughput"]["per_s"], e2e["throughput"]["raw_per_s"]))
    for name, label in (("bridge", "bridge\nsignals/s"), ("router", "router\nevents/s")):
        if figures := results.get(name):
            pairs.append((label, figures["per_s"], figures["raw_per_s"]))
    if gw := results.get("gateway"):
        pairs.append((f"gateway\n{gw['callers']} callers/s", gw["concurrent"]["gateway_per_s"],
                      gw["concurrent"]["direct_per_s"]))
    latencies = []
    if e2e:
        latencies.append(("end to end p50", e2e["latency_ms"]["p50"], e2e["latency_ms"]["raw_p50"]))
        latencies.append(("end to end p99", e2e["latency_ms"]["p99"], e2e["latency_ms"]["raw_p99"]))
    if gw:
        latencies.append(("gateway p50", gw["sequential_p50_ms"]["gateway"], gw["sequential_p50_ms"]["direct"]))
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    for axis, data, title in ((left, pairs, "throughput (higher is better)"),
                              (right, latencies, "latency, ms (lower is better)")):
        labels = [d[0] for d in data]
        positions = range(len(data))
        axis.bar([p - 0.2 for p in positions], [d[1] for d in data], width=0.4, label="Aurora")
        axis.bar([p + 0.2 for p in positions], [d[2] for d in data], width=0.4, label="baseline, same run")
        axis.set_xticks(list(positions), labels, fontsize=8)
        axis.set_title(title)
        axis.legend(fontsize=8)
    info = results.get("machine", {})
    figure.suptitle(f"Aurora benchmarks — {info.get('cpus', '?')} CPUs, {info.get('at', '')}")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def paste_into_docs(table: str) -> None:
    """Replace what stands between the bench markers of docs/benchmarks.md and the README with `table`."""
    begin, end = "<!-- bench:begin -->\n", "<!-- bench:end -->"
    for page in (REPO / "docs" / "benchmarks.md", REPO / "README.md"):
        text = page.read_text(encoding="utf-8")
        head, found, rest = text.partition(begin)
        if not found:
            raise SystemExit(f"{page}: no {begin.strip()} marker to put the table under")
        _, _, tail = rest.partition(end)
        page.write_text(head + begin + table + end + tail, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", help="comma-separated: " + ",".join(BENCHMARKS))
    parser.add_argument("--render", action="store_true", help="only redraw the table and chart")
    parser.add_argument("--docs", action="store_true", help="also put the table into docs/benchmarks.md and the README")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    results_path = OUT / "results.json"
    failed: list[str] = []
    if not args.render:
        names = args.only.split(",") if args.only else list(BENCHMARKS)
        unknown = set(names) - set(BENCHMARKS)
        if unknown:
            parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
        results_path.write_text(json.dumps({"machine": machine()}))
        failed = run_all(names, results_path)
    results = json.loads(results_path.read_text())
    (OUT / "results.md").write_text(markdown(results))
    chart(results, OUT / "results.png")
    print(markdown(results))
    if args.docs:
        paste_into_docs(markdown(results))
    print(f"wrote {results_path}, {OUT / 'results.md'} and {OUT / 'results.png'}")
    if failed:
        print(f"goals missed or errors in: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
