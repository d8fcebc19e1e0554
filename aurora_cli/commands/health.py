"""`aurora health`: one screen for the whole installation — every service instance, app, HTTP
system and stream, and the dead letters — and an exit status a script can act on.

Service instances come from NATS micro discovery (`$SRV.STATS`), which every service answers
for itself: a process that is down is simply missing. Apps are read from the apps bucket (so
they are shown while the gateway is down), systems from the gateway's admin API, streams
from JetStream.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from rich.console import Group
from rich.live import Live
from rich.text import Text

from aurora_cli.commands import streams as streams_command
from aurora_cli.commands.apps import read_apps
from aurora_cli.commands.pool_admin import admin_call
from aurora_cli.output import (
    EXIT_FAILURE,
    CliError,
    connected,
    one_line,
    print_json,
    run,
    settings_or_fail,
    stdout,
    table,
)
from aurora_cli.timing import duration, when
from shared.config.settings import Settings

# The processes an installation needs, by the micro service name each one registers.
CORE_SERVICES = {
    "aurora-app-supervisor": "app-supervisor",
    "aurora-mcp-gateway": "mcp-gateway",
    "aurora-event-bridge": "event-bridge",
    "aurora-router": "router",
    "aurora-runner": "runner",
}
DISCOVERY_WAIT = 0.5  # seconds to collect `$SRV.STATS` answers after the last one arrived
DOWN_PROCESS = {"exited", "gave_up", "restarting", "stopped"}


def register(app: typer.Typer) -> None:
    app.command("health")(health)


def health(
    json_output: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    watch: Annotated[bool, typer.Option("--watch", help="Refresh until Ctrl-C.")] = False,
    interval: Annotated[float, typer.Option(help="Seconds between refreshes with --watch.", min=0.2)] = 2.0,
) -> None:
    """Every service instance, app, HTTP system and stream, and the dead-letter count.

    Exits 1 when something is down, and says what; 0 when all is up."""
    settings = settings_or_fail()
    if watch:
        _watch(settings, interval)
        return
    report = run(collect(settings))
    if json_output:
        print_json(report)
    else:
        stdout.print(render(report))
    if report["problems"]:
        raise typer.Exit(EXIT_FAILURE)


def _watch(settings: Settings, interval: float) -> None:
    with Live(render(run(collect(settings))), console=stdout, auto_refresh=False) as live:
        try:
            while True:
                time.sleep(interval)
                live.update(render(run(collect(settings))), refresh=True)
        except KeyboardInterrupt:
            return


# --------------------------------------------------------------------------- collecting


async def collect(settings: Settings) -> dict[str, Any]:
    async with connected(settings.nats) as nc:
        stats = await discover(nc, "STATS")
        apps = await read_apps(nc, settings.subjects)
    systems, systems_error = await _systems(settings)
    stream_report = await streams_command.collect(settings.nats, settings.subjects)
    report: dict[str, Any] = {
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "services": service_rows(stats, now=datetime.now(UTC)),
        "apps": apps,
        "systems": systems,
        "systems_error": systems_error,
        "streams": stream_rows(stream_report["streams"]),
        "dead_letters": dead_letter_count(stream_report["streams"], settings.subjects.stream("DLQ")),
    }
    report["problems"] = problems(report)
    return report


async def discover(nc: NATS, verb: str, *, wait: float = DISCOVERY_WAIT, limit: float = 3.0) -> list[dict[str, Any]]:
    """Every answer to `$SRV.<verb>`: one per service instance, collected until none has come
    for `wait` seconds (at most `limit`)."""
    answers: asyncio.Queue[Msg] = asyncio.Queue()

    async def received(msg: Msg) -> None:
        await answers.put(msg)

    inbox = nc.new_inbox()
    subscription = await nc.subscribe(inbox, cb=received)
    found: list[dict[str, Any]] = []
    try:
        await nc.publish(f"$SRV.{verb}", b"", reply=inbox)
        deadline = time.monotonic() + limit
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = await asyncio.wait_for(answers.get(), min(wait, left))
            except TimeoutError:
                break
            try:
                found.append(json.loads(msg.data))
            except ValueError:
                continue  # not a micro answer: nothing to show
    finally:
        await subscription.unsubscribe()
    return found


async def _systems(settings: Settings) -> tuple[list[dict[str, Any]], str | None]:
    try:
        return list(await admin_call(settings, "systems", "status", timeout=2.0)), None
    except CliError as exc:  # the gateway is down: its own row says so; systems are unknown
        return [], str(exc)


# --------------------------------------------------------------------------- pure views


def service_rows(stats: Iterable[dict[str, Any]], *, now: datetime) -> list[dict[str, Any]]:
    """One row per micro service name: instances, versions, the youngest uptime, and requests,
    errors and mean latency summed over every endpoint of every instance."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for answer in stats:
        if isinstance(answer, dict) and answer.get("name"):
            by_name.setdefault(str(answer["name"]), []).append(answer)
    for name in CORE_SERVICES:
        by_name.setdefault(name, [])
    rows = []
    for name, instances in sorted(by_name.items()):
        endpoints = [e for i in instances for e in i.get("endpoints") or []]
        requests = sum(int(e.get("num_requests") or 0) for e in endpoints)
        busy_ns = sum(int(e.get("processing_time") or 0) for e in endpoints)
        uptimes = [_uptime(i.get("started"), now) for i in instances]
        known = [u for u in uptimes if u is not None]
        rows.append({
            "name": name,
            "core": name in CORE_SERVICES,
            "instances": len(instances),
            "ids": sorted(str(i.get("id")) for i in instances),
            "versions": sorted({str(i.get("version")) for i in instances}),
            "uptime_s": min(known) if known else None,
            "requests": requests,
            "errors": sum(int(e.get("num_errors") or 0) for e in endpoints),
            "avg_ms": round(busy_ns / requests / 1e6, 3) if requests else None,
            "last_error": next((e.get("last_error") for e in endpoints if e.get("last_error")), None),
        })
    return rows


def _uptime(started: Any, now: datetime) -> float | None:
    at = when(started)
    return None if at is None else max((now - at).total_seconds(), 0.0)


def stream_rows(streams: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each stream with its lag (what its consumers have yet to take, or to settle), its replicas
    and what is wrong with them on a cluster (`replication`: None when nothing is)."""
    return [{
        "name": s["name"],
        "messages": s["messages"],
        "consumers": len(s["consumers"]),
        "lag": max((c["pending"] + c["ack_pending"] for c in s["consumers"]), default=0),
        "replicas": streams_command.replication_cell(s),
        "replication": replication_problem(s),
    } for s in streams]


UNHEARD_MS = 10_000  # a follower the leader has not heard from for this long is gone, not slow


def replication_problem(stream: dict[str, Any]) -> str | None:
    """A replicated stream without a leader takes no writes; a replica that is offline or not
    heard from lately (a killed node is not marked offline) leaves it with less redundancy than it
    was created with. A follower still catching up is not a problem."""
    if stream.get("replicas", 1) <= 1:
        return None
    if not stream.get("leader"):
        return "no leader: too few of its servers are up to elect one"
    gone = [str(f["name"]) for f in stream.get("followers") or [] if _unreachable(f)]
    return f"replica{'s' if len(gone) > 1 else ''} {', '.join(gone)} unreachable" if gone else None


def _unreachable(follower: dict[str, Any]) -> bool:
    unheard = int(follower.get("active_ms") or 0)  # 0: not heard from since this leader was elected
    return bool(follower.get("offline")) or unheard > UNHEARD_MS or (not follower.get("current") and unheard == 0)


def dead_letter_count(streams: Iterable[dict[str, Any]], dlq_name: str) -> int:
    return next((int(s["messages"]) for s in streams if s["name"] == dlq_name), 0)


def problems(report: dict[str, Any]) -> list[str]:
    """What is down, one sentence each; empty when everything is up."""
    found = [f"{CORE_SERVICES[row['name']]}: no instance answers ($SRV.STATS)"
             for row in report["services"] if row["core"] and row["instances"] == 0]
    for app in report["apps"]:
        where = f"app {app['app']} ({app['instance']})"
        if app.get("session") not in (None, "connected"):
            found.append(f"{where}: session {app['session']}" + _because(app.get("last_error")))
        elif app.get("session") is None and app.get("process") is None:
            found.append(f"{where}: no session and no process reported")
        if app.get("process") in DOWN_PROCESS:
            found.append(f"{where}: process {app['process']}" + _because(app.get("process_error")))
    for system in report["systems"]:
        if not system.get("enabled") or system.get("type", "http") != "http":
            continue  # an MCP system is its app's session, above
        if system.get("circuit") == "open":
            found.append(f"system {system['name']}: circuit open" + _because(system.get("last_error")))
        elif system.get("health") == "down":
            found.append(f"system {system['name']}: down" + _because(system.get("last_error")))
    found += [f"stream {s['name']}: {s['replication']}" for s in report["streams"] if s.get("replication")]
    return found


def last_probe(system: dict[str, Any], now: datetime) -> str:
    """When an HTTP system was last probed, as an age: 'off' when nothing probes it (its calls
    alone judge it), 'not yet' before the first probe."""
    if system.get("type") != "http":
        return "-"
    if not system.get("probe"):
        return "off"
    at = when(system.get("last_probe"))
    return "not yet" if at is None else f"{duration(max((now - at).total_seconds(), 0.0))} ago"


ERROR_WIDTH = 160


def _because(error: Any) -> str:
    return f" — {one_line(error, ERROR_WIDTH)}" if error else ""


def render(report: dict[str, Any]) -> Group:
    services = table("services", ["service", "instances", "version", "uptime", "requests", "errors", "avg ms",
                                  "last error"], [
        [r["name"], "0 DOWN" if r["core"] and not r["instances"] else r["instances"],
         ", ".join(r["versions"]) or "-", duration(r["uptime_s"]), r["requests"], r["errors"],
         "-" if r["avg_ms"] is None else f"{r['avg_ms']:.2f}", one_line(r.get("last_error"), ERROR_WIDTH)]
        for r in report["services"]])
    apps = table("apps", ["app", "instance", "session", "process", "restarts", "last error"], [
        [a["app"], a["instance"], a.get("session") or "-", a.get("process") or "-", a.get("restarts"),
         a.get("last_error")] for a in report["apps"]])
    now = when(report.get("at")) or datetime.now(UTC)
    systems = table("systems", ["system", "type", "enabled", "health", "circuit", "last probe", "last error"], [
        [s.get("name"), s.get("type"), "yes" if s.get("enabled") else "no", s.get("health") or "-",
         s.get("circuit") or "-", last_probe(s, now), s.get("last_error")] for s in report["systems"]])
    streams = table("streams", ["stream", "messages", "consumers", "lag", "replicas"], [
        [s["name"], s["messages"], s["consumers"], s["lag"], s["replicas"]] for s in report["streams"]])
    parts: list[Any] = [services, apps, systems, streams]
    if report.get("systems_error"):
        parts.append(Text(f"systems unknown: {report['systems_error']}", style="yellow"))
    parts.append(Text(f"dead letters: {report['dead_letters']}"))
    if report["problems"]:
        parts.append(Text("DOWN:\n" + "\n".join(f"  - {p}" for p in report["problems"]), style="bold red"))
    else:
        parts.append(Text(f"all up ({report['at']})", style="green"))
    return Group(*parts)
