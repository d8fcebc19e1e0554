"""Every missing required field and every wrong type is an EnvelopeError naming that field."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from shared.contracts.validation import AmpEvent, validate_event, validate_native_event
from shared.errors import EnvelopeError
from tests.unit.contracts.examples import FULL

# Fields an envelope cannot do without (with their parent present).
REQUIRED = [
    "header",
    "payload",
    "header.message_id",
    "header.timestamp",
    "header.source",
    "header.source.app",
    "payload.type",
    "payload.actor.id",
    "payload.actor.kind",
    "payload.subject.kind",
    "payload.subject.id",
]

# Every field with a value of the wrong JSON type (or a malformed value of the right type).
WRONG = [
    ("header", "not an object"),
    ("payload", ["not", "an", "object"]),
    ("header.protocol", "amp/2.0"),
    ("header.protocol", 1.0),
    ("header.method", "tools/call"),
    ("header.method", None),
    ("header.message_id", 42),
    ("header.message_id", "has space"),
    ("header.message_id", ""),
    ("header.timestamp", 1718769600),
    ("header.timestamp", "yesterday"),
    ("header.timestamp", "2026-06-19T12:00:00"),
    ("header.timestamp", "2026-W25-5T12:00+08:00"),
    ("header.timestamp", "2026-06-19 12:00:00+08:00"),
    ("header.source", "im.polaris.qq"),
    ("header.source.app", ["im"]),
    ("header.source.app", "-leading-dash"),
    ("header.source.instance", 0),
    ("header.source.instance", ""),
    ("header.trace", "00-abc"),
    ("header.trace.traceparent", 7),
    ("header.trace.tracestate", False),
    ("payload.type", 3),
    ("payload.type", "Message.Received"),
    ("payload.type", "message..received"),
    ("payload.type", "x" * 129),
    ("payload.session_id", 123456),
    ("payload.summary", {"text": "hi"}),
    ("payload.data", ["text"]),
    ("payload.data", "text"),
    ("payload.expire_at", 0),
    ("payload.expire_at", "soon"),
    ("payload.bot", 1),
    ("payload.workspace", True),
    ("payload.conversation", []),
    ("payload.actor", "u-1"),
    ("payload.actor.id", 1),
    ("payload.actor.id", ""),
    ("payload.actor.kind", "robot"),
    ("payload.subject", ["message"]),
    ("payload.subject.kind", None),
    ("payload.subject.id", 5),
    ("payload.source_event_type", 1),
    ("payload.raw_ref", {}),
    ("payload.synthetic", "false"),
    ("payload.synthetic", 0),
]


def _without(path: str) -> dict[str, Any]:
    envelope = copy.deepcopy(FULL)
    *parents, last = path.split(".")
    node = envelope
    for part in parents:
        node = node[part]
    del node[last]
    return envelope


def _with(path: str, value: Any) -> dict[str, Any]:
    envelope = copy.deepcopy(FULL)
    *parents, last = path.split(".")
    node = envelope
    for part in parents:
        node = node[part]
    node[last] = value
    return envelope


def _fields(error: EnvelopeError) -> set[str]:
    return {field for field, _ in error.problems}


@pytest.mark.parametrize("path", REQUIRED)
def test_a_missing_required_field_is_named(path: str) -> None:
    with pytest.raises(EnvelopeError) as caught:
        validate_event(json.dumps(_without(path)))
    assert _fields(caught.value) == {path}
    assert any("required" in reason.lower() for _, reason in caught.value.problems)
    assert path in str(caught.value)


def test_the_required_list_is_the_models_own() -> None:
    """If a field becomes required (or optional), the list above must follow."""

    def walk(schema: dict[str, Any], defs: dict[str, Any], prefix: str) -> set[str]:
        found = set()
        for name, prop in schema.get("properties", {}).items():
            path = f"{prefix}{name}"
            if name in schema.get("required", []):
                found.add(path)
            options = prop.get("anyOf", [prop])
            for option in options:
                ref = option.get("$ref")
                if ref:
                    found |= walk(defs[ref.split("/")[-1]], defs, path + ".")
        return found

    schema = AmpEvent.model_json_schema()
    assert walk(schema, schema["$defs"], "") == set(REQUIRED)


def test_every_field_of_the_envelope_is_covered_by_a_wrong_type_case() -> None:
    def leaves(value: dict[str, Any], prefix: str = "") -> set[str]:
        found = set()
        for key, item in value.items():
            found.add(prefix + key)
            if isinstance(item, dict) and key != "data":
                found |= leaves(item, f"{prefix}{key}.")
        return found

    assert leaves(FULL) == {path for path, _ in WRONG}


@pytest.mark.parametrize(("path", "value"), WRONG, ids=[f"{p}={v!r}"[:60] for p, v in WRONG])
def test_a_wrong_value_is_named(path: str, value: Any) -> None:
    with pytest.raises(EnvelopeError) as caught:
        validate_event(json.dumps(_with(path, value)))
    fields = _fields(caught.value)
    # Unions (`X | None`) may report per branch (`payload.actor.ActorModel`); the field leads.
    assert fields and all(f == path or f.startswith(path + ".") for f in fields), fields


@pytest.mark.parametrize("path", ["footer", "payload.extra", "header.source.region"])
def test_unknown_keys_are_named(path: str) -> None:
    with pytest.raises(EnvelopeError) as caught:
        validate_event(json.dumps(_with(path, "x")))
    assert _fields(caught.value) == {path}


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\xff\xfe\x00",
        b"[1, 2]",
        b"null",
        b'"envelope"',
        b'{"header": ',
        # Not JSON, though some parsers take them; the hot path never would.
        b'{"header": {}, "payload": {"type": "x", "data": {"v": NaN}}}',
        b'{"header": {}, "payload": {"type": "x", "data": {"v": Infinity}}}',
        b'{"header": {}, "payload": {"type": "x", "data": {"v": 1e999}}}',
        "\ud800",
    ],
)
def test_input_that_is_not_a_json_object_is_a_root_error(raw: bytes | str) -> None:
    with pytest.raises(EnvelopeError) as caught:
        validate_event(raw)
    assert _fields(caught.value) == {"(root)"}


def test_a_dict_with_values_json_cannot_carry_is_an_envelope_error() -> None:
    for bad in (float("nan"), float("inf"), {1, 2}, object()):
        envelope = _with("payload.data", {"v": bad})
        with pytest.raises(EnvelopeError):
            validate_event(envelope)


def test_several_problems_are_all_reported() -> None:
    envelope = _with("payload.type", 3)
    envelope["header"]["timestamp"] = "noon"
    del envelope["header"]["source"]
    with pytest.raises(EnvelopeError) as caught:
        validate_event(envelope)
    assert _fields(caught.value) == {"payload.type", "header.timestamp", "header.source"}


def test_a_native_event_may_leave_the_header_to_the_bridge_but_not_the_type() -> None:
    native = validate_native_event({"payload": {"type": "message.received"}})
    assert native.header.message_id is None and native.header.source is None
    with pytest.raises(EnvelopeError) as caught:
        validate_native_event({"header": {"message_id": "a b"}, "payload": {}})
    assert _fields(caught.value) == {"header.message_id", "payload.type"}
