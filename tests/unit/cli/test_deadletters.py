"""`aurora dlq`'s pure parts: durations, filters, reading a dead letter, what a replay sends."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from aurora_cli.deadletters import DeadLetter, Filter, parse_duration, read_dead_letter, replay_headers, replay_target
from aurora_cli.output import CliError
from shared.jetstream import deadletter as dl

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


def _letter(stage: str = "router", reason: str = "invalid event: x", minutes_ago: float = 5,
            subject: str = "amp.evt.im_polaris_qq.message.received", **original: str) -> DeadLetter:
    headers = dl.dead_letter_headers(stage=stage, reason=reason, original_subject=subject, stream="AMP_EVENTS",
                                     sequence=4, headers=original or None, deliveries=3, consumer="router",
                                     at=(NOW - timedelta(minutes=minutes_ago)).isoformat())
    return read_dead_letter(11, f"amp.dlq.{stage}", headers, b"{}")


@pytest.mark.parametrize(("raw", "seconds"), [("30s", 30), ("10m", 600), ("1h", 3600), ("2d", 172800),
                                              ("1.5h", 5400), (" 5 m ", 300)])
def test_durations(raw: str, seconds: float) -> None:
    assert parse_duration("--since", raw) == timedelta(seconds=seconds)


@pytest.mark.parametrize("raw", ["10", "ten minutes", "1w", "-1m", ""])
def test_a_bad_duration_names_the_option_and_the_form(raw: str) -> None:
    with pytest.raises(CliError, match=r"--older-than .*: give a number and a unit s, m, h or d") as caught:
        parse_duration("--older-than", raw)
    assert caught.value.exit_code == 2


def test_filters_by_stage_reason_and_age() -> None:
    letter = _letter()
    assert Filter().matches(letter, NOW)
    assert Filter(stage="router", reason="INVALID").matches(letter, NOW)
    assert not Filter(stage="runner").matches(letter, NOW)
    assert not Filter(reason="timeout").matches(letter, NOW)
    assert Filter(since=timedelta(minutes=10)).matches(letter, NOW)
    assert not Filter(since=timedelta(minutes=1)).matches(letter, NOW)
    assert Filter(older_than=timedelta(minutes=1)).matches(letter, NOW)
    assert not Filter(older_than=timedelta(hours=1)).matches(letter, NOW)


def test_a_dead_letter_reads_back_with_its_original_headers() -> None:
    letter = _letter(**{"Nats-Msg-Id": "m-1", "traceparent": "00-abc", "x-note": "你好"})
    assert letter.stage == "router" and letter.deliveries == 3 and letter.sequence == 4
    assert letter.headers == {"Nats-Msg-Id": "m-1", "traceparent": "00-abc", "x-note": "你好"}
    older = read_dead_letter(2, "amp.dlq.event_bridge", {dl.REASON: "bad"}, None)  # written before these headers
    assert (older.stage, older.deliveries, older.headers, older.at, older.via) == ("event_bridge", None, {}, None,
                                                                                   "stage")


def test_original_headers_too_large_are_cut_and_say_so() -> None:
    encoded = dl.encode_original_headers({"big": "x" * (dl.MAX_HEADERS_BYTES + 1)})
    assert encoded is not None and "exceeded" in dl.decode_original_headers(encoded)["Aurora-Dlq-Cut"]
    assert dl.decode_original_headers("not json") == {} and dl.decode_original_headers('["a"]') == {}


def test_a_replay_keeps_the_headers_but_jetstreams_and_names_itself() -> None:
    letter = _letter(**{"Nats-Msg-Id": "m-1", "Nats-Expected-Stream": "X", "traceparent": "00-abc"})
    assert replay_headers(letter, "AMP_DLQ") == {
        "traceparent": "00-abc", "Nats-Msg-Id": "dlq-replay:AMP_DLQ:11", "Aurora-Dlq-Replayed-From": "AMP_DLQ:11"}
    assert replay_target(letter, "amp") == "amp.evt.im_polaris_qq.message.received"


@pytest.mark.parametrize(("subject", "problem"), [
    ("", "no replayable original subject"),
    ("other.evt.a.b", "only subjects under amp.>"),
    ("amp.evt.*.b", "no replayable original subject"),
    ("amp.evt.aurora_gateway.approval.granted", "platform service's own evt"),
    ("amp.sig.aurora_runner.platform_event", "platform service's own sig"),
])
def test_a_replay_goes_only_where_the_operator_may_send(subject: str, problem: str) -> None:
    with pytest.raises(CliError, match=problem):
        replay_target(_letter(subject=subject), "amp")
