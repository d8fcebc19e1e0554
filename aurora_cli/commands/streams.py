"""`aurora streams`: each Aurora stream (AMP_* under the prefix) and its consumers, with pending work;
on a cluster, each stream's replicas, its leader and how far each follower lags behind it."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from nats.js.api import ConsumerInfo, StreamInfo
from nats.js.manager import JetStreamManager

from aurora_cli.output import connected, print_json, run, settings_or_fail, stdout, table
from shared.config.settings import NatsSettings
from shared.contracts.subjects import Subjects

PAGE = 256  # JetStream's stream list page size


def register(app: typer.Typer) -> None:
    app.command(name="streams")(streams)


def streams(
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Each stream of this Aurora installation and each consumer: messages, bytes, replicas, leader and
    follower lag, pending, ack-pending."""
    settings = settings_or_fail()
    report = run(collect(settings.nats, settings.subjects))
    if as_json:
        print_json(report)
        return
    render(report)


async def collect(nats_settings: NatsSettings, subjects: Subjects) -> dict[str, Any]:
    async with connected(nats_settings) as nc:
        jsm = nc.jsm()
        infos = [info for info in await _all_streams(jsm) if is_aurora_stream(subjects, info.config.name)]
        result = []
        for info in sorted(infos, key=lambda i: str(i.config.name)):
            consumers = await jsm.consumers_info(str(info.config.name))
            result.append(stream_report(info, consumers))
    return {"prefix": subjects.prefix, "streams": result}


def is_aurora_stream(subjects: Subjects, name: str | None) -> bool:
    """The platform's streams, and the run records' (where the runs wait: the runners' lag is there)."""
    return bool(name) and (str(name).startswith(subjects.stream("")) or name == f"KV_{subjects.stream('RUN_RECORDS')}")


async def _all_streams(jsm: JetStreamManager) -> list[StreamInfo]:
    found: list[StreamInfo] = []
    while True:
        page = await jsm.streams_info(offset=len(found))
        found.extend(page)
        if len(page) < PAGE:
            return found


def stream_report(info: StreamInfo, consumers: list[ConsumerInfo]) -> dict[str, Any]:
    state, config = info.state, info.config
    retention = getattr(config.retention, "value", config.retention)
    return {
        "name": config.name,
        "subjects": list(config.subjects or []),
        "retention": retention,
        "messages": state.messages,
        "bytes": state.bytes,
        "first_seq": state.first_seq,
        "last_seq": state.last_seq,
        **replication_report(info),
        "consumers": [consumer_report(c) for c in sorted(consumers, key=lambda c: c.name)],
    }


def replication_report(info: StreamInfo) -> dict[str, Any]:
    """`replicas` (configured), `leader` (None on a single server, which reports no cluster),
    each follower's state, and `lag`: the most operations any follower is behind the leader."""
    cluster = info.cluster
    peers = cluster.replicas or [] if cluster is not None else []
    followers: list[dict[str, Any]] = [
        {"name": peer.name, "current": bool(peer.current), "offline": bool(peer.offline), "lag": peer.lag or 0,
         "active_ms": round((peer.active or 0) / 1e6)}
        for peer in peers
    ]
    return {
        "replicas": info.config.num_replicas or 1,
        "leader": cluster.leader if cluster is not None else None,
        "followers": sorted(followers, key=lambda f: str(f["name"])),
        "lag": max((peer.lag or 0 for peer in peers), default=0),
    }


def replication_cell(stream: dict[str, Any]) -> str:
    """`3 (aurora-0, lag 0)`; a follower that is offline or not current is named."""
    if stream["leader"] is None:
        return str(stream["replicas"])
    behind = [f["name"] + (" offline" if f["offline"] else " behind") for f in stream["followers"]
              if f["offline"] or not f["current"]]
    extra = f"; {', '.join(behind)}" if behind else ""
    return f"{stream['replicas']} (leader {stream['leader']}, lag {stream['lag']}{extra})"


def consumer_report(info: ConsumerInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "durable": bool(info.config.durable_name),
        "filter": info.config.filter_subject or list(info.config.filter_subjects or []) or None,
        "pending": info.num_pending or 0,
        "ack_pending": info.num_ack_pending or 0,
        "redelivered": info.num_redelivered or 0,
        "waiting": info.num_waiting or 0,
        "delivered_seq": info.delivered.stream_seq if info.delivered else None,
        "ack_floor_seq": info.ack_floor.stream_seq if info.ack_floor else None,
    }


def render(report: dict[str, Any]) -> None:
    if not report["streams"]:
        stdout.print(f"no streams under the prefix {report['prefix']!r} yet: is the stack running?",
                     markup=False)
        return
    rows = [[s["name"], ", ".join(s["subjects"]), s["retention"], s["messages"], human_bytes(s["bytes"]),
             replication_cell(s), len(s["consumers"])] for s in report["streams"]]
    stdout.print(table("Streams", ["stream", "subjects", "retention", "messages", "bytes", "replicas",
                                   "consumers"], rows))
    consumer_rows = [
        [s["name"], c["name"] + ("" if c["durable"] else " (ephemeral)"), c["pending"], c["ack_pending"],
         c["redelivered"], c["waiting"]]
        for s in report["streams"] for c in s["consumers"]
    ]
    if consumer_rows:
        stdout.print(table("Consumers", ["stream", "consumer", "pending", "ack pending", "redelivered",
                                         "waiting pulls"], consumer_rows))


def human_bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")
