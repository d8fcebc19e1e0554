"""`aurora events` arguments are checked before anything is sent, with one clear line each."""

from __future__ import annotations

import json
import uuid

import pytest
from typer.testing import CliRunner

from aurora_cli.commands.events import (
    build_native_event,
    event_json,
    event_line,
    parse_data,
    resolve_event_filter,
)
from aurora_cli.localnats import free_port
from aurora_cli.main import app
from aurora_cli.output import EXIT_USAGE, CliError
from shared.contracts.subjects import Subjects
from shared.contracts.validation import validate_native_event

AMP = Subjects("amp")


@pytest.mark.parametrize(("given", "expected"), [
    (None, "amp.evt.>"),
    ("", "amp.evt.>"),
    ("amp.evt.>", "amp.evt.>"),
    ("amp.evt", "amp.evt.>"),
    ("amp.evt.*.message.>", "amp.evt.*.message.>"),
    ("*.message.>", "amp.evt.*.message.>"),
    ("im_polaris_qq.>", "amp.evt.im_polaris_qq.>"),
])
def test_event_filters_are_taken_under_the_prefix(given: str | None, expected: str) -> None:
    assert resolve_event_filter(AMP, given) == expected


def test_the_filter_follows_a_configured_prefix() -> None:
    assert resolve_event_filter(Subjects("test1"), None) == "test1.evt.>"
    assert resolve_event_filter(Subjects("test1"), "*.x") == "test1.evt.*.x"


@pytest.mark.parametrize("bad", ["amp.sig.>", "amp.evt.>.x", "amp.evt..x", "amp.evt.a*", "a b"])
def test_bad_filters_are_usage_errors(bad: str) -> None:
    with pytest.raises(CliError) as error:
        resolve_event_filter(AMP, bad)
    assert error.value.exit_code == EXIT_USAGE


def test_data_must_be_a_json_object() -> None:
    assert parse_data(None) == {}
    assert parse_data('{"text": "你好"}') == {"text": "你好"}
    with pytest.raises(CliError, match="not valid JSON"):
        parse_data("{nope")
    with pytest.raises(CliError, match="must be a JSON object, not list"):
        parse_data("[1, 2]")


def test_a_built_event_is_a_valid_native_event_with_a_chosen_message_id() -> None:
    event = build_native_event("message.received", app_id="im.polaris.qq", data={"text": "你好"},
                               session_id="group_1", synthetic=True)
    native = validate_native_event(event)
    assert native.payload.type == "message.received"
    assert native.payload.session_id == "group_1"
    assert native.payload.synthetic is True
    assert uuid.UUID(str(native.header.message_id)).version == 4
    assert native.header.source is None  # the bridge sets it from the signal's app


@pytest.mark.parametrize(("kwargs", "needle"), [
    ({"event_type": "Message.Received"}, "payload.type"),
    ({"event_type": "message..received"}, "payload.type"),
    ({"event_type": "tool.succeeded"}, "reserved"),
    ({"event_type": "app.connected"}, "reserved"),
    ({"app_id": "im polaris"}, "--app"),
    ({"expire_at": "tomorrow"}, "payload.expire_at"),
])
def test_invalid_events_are_refused_locally(kwargs: dict[str, str], needle: str) -> None:
    args = {"event_type": "message.received", "app_id": "im.polaris.qq", **kwargs}
    with pytest.raises(CliError, match=needle.replace(".", r"\.")) as error:
        build_native_event(args.pop("event_type"), data={}, **args)  # type: ignore[arg-type]
    assert error.value.exit_code == EXIT_USAGE


EVENT = {
    "header": {"protocol": "amp/1.0", "method": "aurora/event", "message_id": "m1",
               "timestamp": "2026-06-19T12:00:00.123+08:00", "source": {"app": "im.polaris.qq", "instance": "default"}},
    "payload": {"type": "message.received", "data": {"text": "你好"}, "synthetic": False},
}


def test_an_event_line_shows_time_subject_type_app_and_data() -> None:
    line = event_line("amp.evt.im_polaris_qq.message.received", json.dumps(EVENT).encode())
    assert line == ('12:00:00.123  amp.evt.im_polaris_qq.message.received  message.received  '
                    'im.polaris.qq  {"text":"你好"}')


def test_an_event_line_prefers_the_summary_flags_synthetic_and_cuts_long_text() -> None:
    event = json.loads(json.dumps(EVENT))
    event["payload"].update(summary="收到 " + "x" * 300, synthetic=True)
    event["header"]["source"]["instance"] = "b"
    line = event_line("s", json.dumps(event).encode())
    assert "im.polaris.qq/b  收到 x" in line and line.endswith("… [synthetic]")
    assert len(line) < 200


def test_bytes_that_are_not_an_event_are_shown_not_fatal() -> None:
    assert "(not an AMP event)" in event_line("s", b"\xff\xfe garbage")
    assert event_json("s", b"garbage") == {"subject": "s", "error": "not JSON", "raw": "garbage"}
    assert event_json("s", json.dumps(EVENT).encode()) == EVENT


runner = CliRunner()


def _nobody() -> dict[str, str]:
    return {"NATS_URL": f"nats://127.0.0.1:{free_port()}"}


@pytest.mark.parametrize(("args", "needle"), [
    (["events", "emit", "Bad.Type", "--app", "a"], "invalid event: payload.type"),
    (["events", "emit", "message.x", "--app", "a", "--data", "{nope"], "--data is not valid JSON"),
    (["events", "emit", "message.x", "--app", "a", "--data", '"text"'], "--data must be a JSON object"),
    (["events", "emit", "tool.failed", "--app", "a"], "reserved for the platform"),
    (["events", "emit", "message.x", "--app", "a", "--instance", "a.b"], "--instance"),
    (["events", "tail", "amp.sig.>"], "is not an event subject"),
])
def test_usage_errors_exit_2_with_one_line_before_connecting(args: list[str], needle: str) -> None:
    result = runner.invoke(app, args, env=_nobody())
    assert result.exit_code == EXIT_USAGE, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and needle in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output


@pytest.mark.parametrize("args", [["streams"], ["streams", "--json"], ["events", "tail"],
                                  ["events", "emit", "message.x", "--app", "a"]])
def test_unreachable_nats_is_a_one_line_error(args: list[str]) -> None:
    env = _nobody()
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: cannot connect to NATS at {env['NATS_URL']}")
    assert "Traceback" not in result.output


def test_a_bad_setting_is_a_one_line_error() -> None:
    result = runner.invoke(app, ["streams"], env={"AURORA_SUBJECT_PREFIX": "a.b"})
    assert result.exit_code == 1
    assert result.stderr.startswith("error: configuration:") and "AURORA_SUBJECT_PREFIX" in result.stderr
