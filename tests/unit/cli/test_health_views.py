"""The pure parts of `aurora health`: grouping micro answers, stream lag, what counts as down."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from rich.console import Console

from aurora_cli.commands.health import (
    CORE_SERVICES,
    dead_letter_count,
    last_probe,
    problems,
    render,
    service_rows,
    stream_rows,
)

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _stats(name: str, instance: str, *, started: datetime, requests: int, errors: int = 0,
           busy_ms: float = 0.0) -> dict[str, Any]:
    return {"name": name, "id": instance, "version": "0.1.0", "started": started.isoformat(),
            "endpoints": [{"name": "e", "num_requests": requests, "num_errors": errors,
                           "processing_time": int(busy_ms * 1e6), "last_error": "boom" if errors else ""}]}


def test_instances_of_one_service_are_summed_and_the_youngest_uptime_is_shown() -> None:
    rows = {r["name"]: r for r in service_rows([
        _stats("aurora-runner", "a", started=NOW - timedelta(hours=2), requests=10, busy_ms=20),
        _stats("aurora-runner", "b", started=NOW - timedelta(seconds=30), requests=30, errors=1, busy_ms=60),
    ], now=NOW)}
    runner = rows["aurora-runner"]
    assert runner["instances"] == 2 and runner["ids"] == ["a", "b"]
    assert runner["uptime_s"] == 30.0
    assert (runner["requests"], runner["errors"], runner["avg_ms"]) == (40, 1, 2.0)
    assert runner["last_error"] == "boom"
    # Every core service has a row, answered or not.
    assert set(CORE_SERVICES) <= set(rows) and rows["aurora-router"]["instances"] == 0


def _report(**parts: Any) -> dict[str, Any]:
    answered = [_stats(name, "x", started=NOW, requests=0) for name in CORE_SERVICES]
    report: dict[str, Any] = {"services": service_rows(answered, now=NOW), "apps": [], "systems": [], "streams": []}
    report.update(parts)
    return report


def test_everything_answering_is_no_problem() -> None:
    assert problems(_report()) == []


def test_a_core_service_without_instances_is_down() -> None:
    report = _report(services=service_rows([], now=NOW))
    assert "router: no instance answers ($SRV.STATS)" in problems(report)
    assert len(problems(report)) == len(CORE_SERVICES)


def test_an_app_whose_session_or_process_is_down_is_named_with_its_error() -> None:
    report = _report(apps=[
        {"app": "chat", "instance": "default", "session": "connected", "process": "running"},
        {"app": "crm", "instance": "default", "session": "unavailable", "process": None,
         "last_error": "connection refused\nat 10.0.0.1"},
        {"app": "notes", "instance": "default", "session": "connected", "process": "gave_up",
         "process_error": "exit 3"},
    ])
    assert problems(report) == [
        "app crm (default): session unavailable — connection refused at 10.0.0.1",
        "app notes (default): process gave_up — exit 3",
    ]


def test_an_enabled_http_system_that_is_down_or_has_its_circuit_open_is_a_problem() -> None:
    report = _report(systems=[
        {"name": "orders", "type": "http", "enabled": True, "circuit": "open", "health": "down",
         "last_error": "HTTP 503"},
        {"name": "legacy", "type": "http", "enabled": False, "circuit": "open", "health": "down"},
        {"name": "assets", "type": "http", "enabled": True, "circuit": "half_open", "health": "up"},
        {"name": "crm", "type": "http", "enabled": True, "circuit": "closed", "health": "down",
         "last_error": "ConnectError for http://crm/healthz"},
        {"name": "billing", "type": "http", "enabled": True, "circuit": "closed", "health": "unknown"},
        {"name": "im.polaris.qq", "type": "mcp", "enabled": True, "health": "unavailable"},  # its app's row says so
    ])
    assert problems(report) == ["system orders: circuit open — HTTP 503",
                                "system crm: down — ConnectError for http://crm/healthz"]


def test_the_last_probe_is_an_age_or_says_why_there_is_none() -> None:
    probed = {"type": "http", "probe": "GET /healthz every 15s"}
    assert last_probe({**probed, "last_probe": (NOW - timedelta(seconds=75)).isoformat()}, NOW) == "1m15s ago"
    assert last_probe({**probed, "last_probe": (NOW + timedelta(seconds=1)).isoformat()}, NOW) == "0s ago"
    assert last_probe({**probed, "last_probe": None}, NOW) == "not yet"
    assert last_probe({"type": "http", "probe": None}, NOW) == "off"
    assert last_probe({"type": "mcp"}, NOW) == "-"


def _stream(name: str, messages: int, consumers: list[dict[str, int]], *, replicas: int = 1,
            leader: str | None = None, followers: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A stream as `aurora streams` collects it (a single server reports no leader)."""
    return {"name": name, "messages": messages, "consumers": consumers, "replicas": replicas, "leader": leader,
            "followers": followers or [], "lag": max((f.get("lag", 0) for f in followers or []), default=0)}


def _follower(name: str, *, offline: bool = False, current: bool = True, active_ms: int = 5) -> dict[str, Any]:
    return {"name": name, "current": current, "offline": offline, "lag": 0, "active_ms": active_ms}


def test_stream_lag_is_the_most_a_consumer_has_left_and_dead_letters_are_counted() -> None:
    streams = [
        _stream("AMP_EVENTS", 50, [{"pending": 3, "ack_pending": 2}, {"pending": 10, "ack_pending": 0}]),
        _stream("AMP_DLQ", 4, []),
    ]
    assert stream_rows(streams) == [
        {"name": "AMP_EVENTS", "messages": 50, "consumers": 2, "lag": 10, "replicas": "1", "replication": None},
        {"name": "AMP_DLQ", "messages": 4, "consumers": 0, "lag": 0, "replicas": "1", "replication": None},
    ]
    assert dead_letter_count(streams, "AMP_DLQ") == 4 and dead_letter_count([], "AMP_DLQ") == 0


def test_a_replicated_stream_without_a_leader_or_with_a_replica_offline_is_a_problem() -> None:
    healthy = _stream("AMP_EVENTS", 1, [], replicas=3, leader="n-0",  # catching up: fine
                      followers=[_follower("n-1", active_ms=9000), _follower("n-2", current=False)])
    offline = _stream("AMP_RUNS", 1, [], replicas=3, leader="n-0",
                      followers=[_follower("n-1", offline=True), _follower("n-2", active_ms=12_000)])
    unheard = _stream("AMP_DLQ", 1, [], replicas=3, leader="n-0",  # killed before this leader heard it
                      followers=[_follower("n-1"), _follower("n-2", current=False, active_ms=0)])
    leaderless = _stream("AMP_AUDIT", 1, [], replicas=3)
    rows = stream_rows([healthy, offline, unheard, leaderless])
    assert [r["replication"] for r in rows] == [
        None, "replicas n-1, n-2 unreachable", "replica n-2 unreachable",
        "no leader: too few of its servers are up to elect one"]
    assert rows[0]["replicas"] == "3 (leader n-0, lag 0; n-2 behind)"
    report = _report(streams=rows, dead_letters=0)
    assert problems(report) == ["stream AMP_RUNS: replicas n-1, n-2 unreachable",
                                "stream AMP_DLQ: replica n-2 unreachable",
                                "stream AMP_AUDIT: no leader: too few of its servers are up to elect one"]


def test_the_screen_shows_each_services_last_error_and_each_systems_last_probe() -> None:
    answered = [_stats(name, "x", started=NOW, requests=3, errors=1 if name == "aurora-router" else 0)
                for name in CORE_SERVICES]
    report = _report(services=service_rows(answered, now=NOW), streams=[], dead_letters=0, at=NOW.isoformat(),
                     systems=[{"name": "assets", "type": "http", "enabled": True, "health": "up", "circuit": "closed",
                               "probe": "GET /healthz every 15s",
                               "last_probe": (NOW - timedelta(seconds=4)).isoformat()}])
    report["problems"] = problems(report)
    console = Console(width=200, record=True)
    console.print(render(report))
    text = console.export_text()
    router = next(line for line in text.splitlines() if "aurora-router" in line)
    assert "boom" in router and "boom" not in next(line for line in text.splitlines() if "aurora-runner" in line)
    assert "4s ago" in next(line for line in text.splitlines() if "assets" in line)
    assert "all up" in text
