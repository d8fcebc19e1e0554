"""`aurora streams` reports every Aurora stream and consumer, as a table or as exact JSON."""

from __future__ import annotations

from tests.harness.cli import Cli, streams_report
from tests.harness.processes import ServiceProcess


def test_streams_json_lists_streams_consumers_and_counts(cli: Cli, bridge: ServiceProcess) -> None:
    for _ in range(3):
        assert cli("events", "emit", "message.received", "--app", "a", "--wait").returncode == 0
    report = streams_report(cli)
    assert report["prefix"] == "amp"
    streams = {s["name"]: s for s in report["streams"]}
    assert {"AMP_EVENTS", "AMP_SIGNALS", "AMP_DLQ"} <= set(streams)
    events = streams["AMP_EVENTS"]
    assert events["messages"] == 3 and events["bytes"] > 0 and events["subjects"] == ["amp.evt.>"]
    (bridge_consumer,) = [c for c in streams["AMP_SIGNALS"]["consumers"] if c["name"] == "event-bridge"]
    assert bridge_consumer["durable"] is True
    assert bridge_consumer["pending"] == 0 and bridge_consumer["ack_pending"] == 0
    assert streams["AMP_SIGNALS"]["retention"] == "workqueue"


def test_streams_shows_pending_work_when_nobody_consumes(cli: Cli, bridge: ServiceProcess) -> None:
    bridge.terminate()
    for _ in range(2):
        assert cli("events", "emit", "message.received", "--app", "a").returncode == 0
    streams = {s["name"]: s for s in streams_report(cli)["streams"]}
    (consumer,) = [c for c in streams["AMP_SIGNALS"]["consumers"] if c["name"] == "event-bridge"]
    assert consumer["pending"] == 2
    assert streams["AMP_SIGNALS"]["messages"] == 2


def test_streams_table_is_readable(cli: Cli, bridge: ServiceProcess) -> None:
    result = cli("streams")
    assert result.returncode == 0, result.stderr
    for needle in ("Streams", "AMP_EVENTS", "AMP_SIGNALS", "workqueue", "Consumers", "event-bridge"):
        assert needle in result.stdout


def test_other_prefixes_are_not_listed(cli: Cli, bridge: ServiceProcess) -> None:
    other = cli("streams", "--json", AURORA_SUBJECT_PREFIX="other")
    assert other.returncode == 0
    assert '"streams":[]' in other.stdout
