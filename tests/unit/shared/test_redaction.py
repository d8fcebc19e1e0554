"""The one redaction module: secret fields by schema and by name, known credential values in any
string, and the approval's decision ids that no app can predict."""

from __future__ import annotations

import json
import logging
import re
import string
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.contracts.approval import Approval, canonical_args_hash, decision_signal_id, public_view
from shared.observability.logs import JsonFormatter, configure_logging, get_logger
from shared.redaction import MARKER, Redactor, is_secret_name, may_name_a_secret, secret_paths

SCHEMA = {
    "type": "object",
    "properties": {
        "user": {"type": "string"},
        "pin": {"type": "string", "format": "password"},
        "profile": {"type": "object", "properties": {"hint": {"type": "string", "writeOnly": True},
                                                     "city": {"type": "string"}}},
        "keys": {"type": "array", "items": {"type": "string", "writeOnly": True}},
        "people": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "otp": {"type": "string", "format": "password"}}}},
        "either": {"anyOf": [{"type": "object", "properties": {"seed": {"writeOnly": True}}}, {"type": "null"}]},
    },
}


@pytest.mark.parametrize("name", ["password", "Passwd", "api_key", "apiKey", "X-Api-Key", "access_token",
                                  "client_secret", "Authorization", "credentials", "new_password_again"])
def test_secret_names_are_recognised(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["user", "max_tokens", "prompt_tokens", "compass", "text", "passenger"])
def test_ordinary_names_are_not_secret(name: str) -> None:
    assert not is_secret_name(name)


def test_schema_marks_nested_fields_arrays_and_branches_secret() -> None:
    redactor = Redactor()
    arguments = {
        "user": "ann", "pin": "4321", "profile": {"hint": "my cat", "city": "Oslo"},
        "keys": ["k1", "k2"], "people": [{"name": "bo", "otp": "777"}], "either": {"seed": "abc"},
        "nested": {"list": [{"Password": "x", "ok": 1}]},
    }
    out = redactor.arguments(arguments, secret_paths(SCHEMA))
    assert out == {
        "user": "ann", "pin": MARKER, "profile": {"hint": MARKER, "city": "Oslo"},
        "keys": [MARKER, MARKER], "people": [{"name": "bo", "otp": MARKER}], "either": {"seed": MARKER},
        "nested": {"list": [{"Password": MARKER, "ok": 1}]},
    }
    assert arguments["pin"] == "4321"  # the caller's arguments are left as they are


def test_known_values_are_scrubbed_inside_any_string_and_key() -> None:
    redactor = Redactor(["tok-ABCDEF123456"])
    redactor.learn("Bearer hdr-987654321")  # a header value: the whole and its token
    value = {"error": "GET https://x.test/?key=tok-ABCDEF123456 failed",
             "tok-ABCDEF123456": ["sent hdr-987654321"]}
    text = json.dumps(redactor.value(value))
    assert "tok-ABCDEF123456" not in text and "hdr-987654321" not in text
    assert text.count(MARKER) == 3
    assert redactor.scrub("short 1234") == "short 1234"  # too short to scrub from text safely


def test_schema_paths_are_worked_out_once_per_schema_object() -> None:
    redactor = Redactor()
    first = redactor.for_schema("t", SCHEMA)
    assert redactor.for_schema("t", SCHEMA) is first
    changed = {**SCHEMA, "properties": {"pin": {"type": "string"}}}
    assert redactor.for_schema("t", changed) == {}


def test_log_lines_are_scrubbed_of_known_values() -> None:
    redactor = Redactor(["log-secret-424242"])
    record = logging.LogRecord("x", logging.INFO, __file__, 1, "failed with log-secret-424242", None, None)
    record.fields = {"url": "http://h/?t=log-secret-424242"}
    line = JsonFormatter("test", redactor.scrub).format(record)
    assert "log-secret-424242" not in line and MARKER in line
    redactor.learn("learnt-later-515151")  # a credential a part reads after start-up
    record.msg = "sent learnt-later-515151"
    assert "learnt-later-515151" not in JsonFormatter("test", redactor.scrub).format(record)


def _approval(salt: str) -> Approval:
    return Approval(id="apr-1", tool="a.b", args_hash=canonical_args_hash({}), task_id="t",
                    requested_at="2026-01-01T00:00:00+00:00", expires_at="2026-01-02T00:00:00+00:00",
                    decision_salt=salt)


def test_decision_ids_depend_on_the_hidden_salt_and_the_verb() -> None:
    one, other = _approval("a" * 32), _approval("b" * 32)
    granted = decision_signal_id(one, "granted")
    assert granted == decision_signal_id(one, "granted")  # published again: the same id
    assert granted != decision_signal_id(other, "granted") and granted != decision_signal_id(one, "denied")
    assert granted != "approval-apr-1-granted"  # not the predictable form
    assert "decision_salt" not in public_view(one) and "a" * 32 not in json.dumps(public_view(one))


KNOWN = "s3cr3t-value-42"
QUOTED = 'q"uo\\ted-value-77'  # JSON escapes it: the text scrub alone would miss it
_names = st.sampled_from(["city", "n", "max_tokens", "tags", "Password", "api_key", "X-Api-Key", "to_ken",
                          "tok\"en", "note", f"k{KNOWN}", "clientSecret", "cookie",
                          # letters and separators only Unicode's rules take for what they stand for
                          "PAſſWORD", "api\u212aey", "Api\u00a0Key", "client\u3000secret", "prİvate_key",
                          "prıvate_key"])
_texts = st.sampled_from(["北京", "plain", f"url?key={KNOWN}", "quote\"d", "back\\slash", f"tab\t{KNOWN}", "token",
                          f"a {QUOTED}"])
_leaves = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _texts
_values = st.recursive(_leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_names, inner, max_size=4),
                       max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(value=_values)
def test_the_json_text_of_a_value_is_what_the_walk_redacts(value: object) -> None:
    """The fast path (encode, then scrub the text) and the walk keep the same thing."""
    redactor = Redactor([KNOWN, QUOTED])
    walked = redactor.value(value)
    text = redactor.json_text(value)
    assert json.loads(text) == walked
    assert KNOWN not in text


def test_the_json_text_follows_a_schemas_secret_paths() -> None:
    redactor = Redactor()
    paths = secret_paths({"type": "object", "properties": {"pin": {"type": "string", "writeOnly": True}}})
    assert json.loads(redactor.json_text({"pin": "1234", "city": "x"}, paths)) == {"pin": MARKER, "city": "x"}


def test_configure_logging_passes_every_line_through_the_services_scrub(capfd: pytest.CaptureFixture[str]) -> None:
    redactor = Redactor()
    root = logging.getLogger()
    kept, level = root.handlers[:], root.level
    try:
        configure_logging("test", "INFO", redactor.scrub)
        redactor.learn("read-at-call-616161")  # learnt after the logs were configured
        get_logger("aurora.test").warning("calling", header="Bearer read-at-call-616161")
    finally:
        root.handlers[:], root.level = kept, level
    err = capfd.readouterr().err
    assert "calling" in err and "read-at-call-616161" not in err and MARKER in err


def test_every_spelling_the_secret_rules_take_case_blind_is_found_by_the_fast_path() -> None:
    """The fast path looks for the secret words in the case-folded text: it must find every
    spelling the name rules (case-insensitive regexes) take for a secret, such as `ſ` for `s`,
    the Kelvin sign for `k`, `İ` and the dotless `ı` for `i`."""
    names = ("password", "passphrase", "secret", "privatekey", "token", "apikey", "authorization", "credential",
             "cookie")
    case_blind = re.compile("[a-z]", re.IGNORECASE)
    taken = [chr(code) for code in range(sys.maxunicode + 1) if case_blind.fullmatch(chr(code))]
    assert {"ſ", "\u212a", "İ", "ı"} <= set(taken)
    for char in taken:
        letter = next(ascii for ascii in string.ascii_lowercase if re.fullmatch(ascii, char, re.IGNORECASE))
        for name in (name for name in names if letter in name):
            spelt = name.replace(letter, char)
            assert is_secret_name(spelt) and may_name_a_secret(spelt), spelt


@pytest.mark.parametrize("text", ['{"PAſſWORD":"x"}', '{"prİvate_key":"x"}', '{"prıvate_key":"x"}',
                                  '{"api\u212aey":"x"}', '{"client\u3000secret":"x"}',
                                  '{"Api\u00a0Key":"x"}', '{"to_ken":1}', '{"x-auth-TOKEN":1}'])
def test_a_text_naming_a_secret_in_any_spelling_is_not_taken_as_plain(text: str) -> None:
    assert may_name_a_secret(text)
    assert Redactor().json_text(json.loads(text)) != text


def test_plain_text_is_taken_as_plain() -> None:
    assert not may_name_a_secret('{"conversation_id":"c-1","text":"hello","compass":3}')
