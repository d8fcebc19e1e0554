"""`aurora events emit|tail` as real processes, with a real event-bridge and nats-server."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from pathlib import Path

from tests.harness.cli import AURORA, Cli, streams_report
from tests.harness.processes import REPO, ServiceProcess, service_env

HELLO = json.dumps({"text": "你好"}, ensure_ascii=False)


def _emit(cli: Cli, *args: str) -> str:
    result = cli("events", "emit", *args)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_emit_prints_the_message_id_and_tail_from_start_shows_the_event(cli: Cli, bridge: ServiceProcess) -> None:
    message_id = _emit(cli, "message.received", "--app", "im.polaris.qq", "--data", HELLO, "--session", "g1")
    assert uuid.UUID(message_id)

    tailed = cli("events", "tail", "--from-start", "--count", "1", "--json", "--timeout", "15")
    assert tailed.returncode == 0, tailed.stderr
    (line,) = tailed.stdout.splitlines()
    event = json.loads(line)
    assert event["header"]["message_id"] == message_id
    assert event["header"]["source"] == {"app": "im.polaris.qq", "instance": "default"}
    assert event["payload"]["type"] == "message.received"
    assert event["payload"]["data"] == {"text": "你好"}
    assert event["payload"]["session_id"] == "g1"

    readable = cli("events", "tail", "--from-start", "--count", "1", "--timeout", "15")
    assert readable.returncode == 0, readable.stderr
    assert "amp.evt.im_polaris_qq.message.received  message.received  im.polaris.qq" in readable.stdout
    assert '{"text":"你好"}' in readable.stdout


def test_tail_shows_only_new_events_unless_from_start(nats_url: str, cli: Cli, bridge: ServiceProcess,
                                                      tmp_path: Path) -> None:
    old = _emit(cli, "message.received", "--app", "a", "--wait")
    out, err = tmp_path / "tail.out", tmp_path / "tail.err"
    with out.open("w") as stdout, err.open("w") as stderr:
        tail = subprocess.Popen([str(AURORA), "events", "tail", "--json", "--count", "1", "--timeout", "30"],
                                env=service_env(nats_url), cwd=REPO, stdout=stdout, stderr=stderr, text=True)
        try:
            deadline = time.monotonic() + 15
            while "tailing" not in err.read_text() and time.monotonic() < deadline:
                assert tail.poll() is None, err.read_text()
                time.sleep(0.05)
            new = _emit(cli, "message.received", "--app", "a")
            assert tail.wait(20) == 0, err.read_text()
        finally:
            if tail.poll() is None:
                tail.kill()
                tail.wait()
    ids = [json.loads(line)["header"]["message_id"] for line in out.read_text().splitlines()]
    assert ids == [new] and old != new


def test_a_relative_filter_selects_events_under_the_prefix(cli: Cli, bridge: ServiceProcess) -> None:
    _emit(cli, "message.received", "--app", "a", "--wait")
    joined = _emit(cli, "group.member_joined", "--app", "a", "--wait")
    tailed = cli("events", "tail", "*.group.>", "--from-start", "--count", "1", "--json", "--timeout", "15")
    assert tailed.returncode == 0, tailed.stderr
    assert [json.loads(x)["header"]["message_id"] for x in tailed.stdout.splitlines()] == [joined]
    assert "amp.evt.*.group.>" in tailed.stderr


def test_tail_with_count_and_timeout_fails_when_too_few_events_arrive(cli: Cli, bridge: ServiceProcess) -> None:
    result = cli("events", "tail", "--count", "1", "--timeout", "0.5", "--json")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "timed out after 0.5s with 0 of 1 events" in result.stderr


def test_emit_wait_says_the_event_is_stored(cli: Cli, bridge: ServiceProcess) -> None:
    result = cli("events", "emit", "message.received", "--app", "im.polaris.qq", "--data", HELLO,
                 "--wait", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "stored"
    assert report["subject"] == "amp.evt.im_polaris_qq.message.received"
    assert isinstance(report["stream_sequence"], int) and report["stream_sequence"] >= 1


def test_emit_wait_reports_a_dead_letter_with_the_reason(cli: Cli, bridge: ServiceProcess) -> None:
    result = cli("events", "emit", "message.received", "--app", "a", "--expire-at", "2000-01-01T00:00:00Z",
                 "--wait", "--json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["status"] == "dead_lettered"
    assert "expired" in report["reason"] and "event_bridge" in report["reason"]
    plain = cli("events", "emit", "message.received", "--app", "a", "--expire-at", "2000-01-01T00:00:00Z",
                "--wait")
    assert plain.returncode == 1
    assert "dead-lettered by the event-bridge: expired" in plain.stderr


def test_emit_wait_times_out_without_a_bridge(cli: Cli, bridge: ServiceProcess) -> None:
    bridge.terminate()
    result = cli("events", "emit", "message.received", "--app", "a", "--wait", "--wait-timeout", "1")
    assert result.returncode == 1
    assert uuid.UUID(result.stdout.strip())
    assert "not seen within 1.0s" in result.stderr


def test_invalid_type_or_json_is_refused_and_nothing_is_sent(cli: Cli, bridge: ServiceProcess) -> None:
    before = streams_report(cli)
    bad_type = cli("events", "emit", "Message.Received", "--app", "a")
    bad_json = cli("events", "emit", "message.received", "--app", "a", "--data", "{'single': 'quotes'}")
    reserved = cli("events", "emit", "tool.succeeded", "--app", "a")
    for result, needle in ((bad_type, "payload.type"), (bad_json, "--data is not valid JSON"),
                           (reserved, "reserved")):
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith("error: ") and needle in result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
        assert result.stdout == ""
    after = streams_report(cli)
    assert [(s["name"], s["last_seq"]) for s in after["streams"]] == \
           [(s["name"], s["last_seq"]) for s in before["streams"]]


def test_without_streams_the_commands_say_what_to_start(cli: Cli) -> None:
    emitted = cli("events", "emit", "message.received", "--app", "a")
    assert emitted.returncode == 1
    assert "no stream stores amp.sig.a.native_event" in emitted.stderr
    tailed = cli("events", "tail")
    assert tailed.returncode == 1
    assert "stream AMP_EVENTS does not exist yet" in tailed.stderr
    listed = cli("streams")
    assert listed.returncode == 0 and "no streams under the prefix 'amp'" in listed.stdout
