"""The router's hot-path event check agrees with the strict edge model, except that it ignores
fields it does not know (ARCHITECTURE §2: readers must survive fields added later)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from services.router.events import decode_event
from shared.contracts.validation import validate_event
from shared.errors import EnvelopeError
from tests.unit.router.factories import event_doc

Mutation = Callable[[dict[str, Any]], None]


def _set(path: str, value: Any) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = doc
        for part in parents:
            target = target.setdefault(part, {})
        target[last] = value
    return mutate


def _drop(path: str) -> Mutation:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target = doc
        for part in parents:
            target = target[part]
        del target[last]
    return mutate


VALID: dict[str, Mutation] = {
    "minimal": lambda doc: None,
    "every routing field": _set("payload", {
        "type": "group.member_joined", "session_id": "g", "summary": "s", "data": {"n": [1, 2.5, None]},
        "expire_at": "2030-01-01T00:00:00.123456Z", "bot": "b", "workspace": "w", "conversation": "c",
        "actor": {"id": "u", "kind": "api"}, "subject": {"kind": "member", "id": "m"},
        "source_event_type": "raw", "raw_ref": "r", "synthetic": True}),
    "trace": _set("header.trace", {"traceparent": "00-abc", "tracestate": None}),
    "colon id": _set("header.message_id", "evt:1:2"),
    "offset": _set("header.timestamp", "2026-06-19T12:00:00-05:30"),
    "instance": _set("header.source.instance", "i" * 64),
    "default protocol": _drop("header.protocol"),
}

INVALID: dict[str, Mutation] = {
    "protocol": _set("header.protocol", "amp/2.0"),
    "method": _set("header.method", "agent/run"),
    "message id pattern": _set("header.message_id", "-bad"),
    "message id newline": _set("header.message_id", "abc\n"),
    "message id type": _set("header.message_id", 5),
    "naive timestamp": _set("header.timestamp", "2026-06-19T12:00:00"),
    "impossible date": _set("header.timestamp", "2026-02-30T12:00:00Z"),
    "week date": _set("header.timestamp", "2026-W25-5T12:00:00Z"),
    "app pattern": _set("header.source.app", "bad app"),
    "empty instance": _set("header.source.instance", ""),
    "long instance": _set("header.source.instance", "i" * 65),
    "no source": _drop("header.source"),
    "type pattern": _set("payload.type", "Message.Received"),
    "type trailing dot": _set("payload.type", "message."),
    "type too long": _set("payload.type", "a" + ".b" * 64),
    "no type": _drop("payload.type"),
    "bot type": _set("payload.bot", 7),
    "data null": _set("payload.data", None),
    "data list": _set("payload.data", [1]),
    "expire_at naive": _set("payload.expire_at", "2030-01-01T00:00:00"),
    "actor kind": _set("payload.actor", {"id": "u", "kind": "robot"}),
    "actor empty id": _set("payload.actor", {"id": "", "kind": "user"}),
    "subject empty": _set("payload.subject", {"kind": "", "id": "x"}),
    "synthetic string": _set("payload.synthetic", "yes"),
    "payload list": _set("payload", []),
}


def _doc(mutate: Mutation) -> dict[str, Any]:
    doc = copy.deepcopy(event_doc("message.received"))
    mutate(doc)
    return doc


@pytest.mark.parametrize("name", list(VALID))
def test_both_accept(name: str) -> None:
    doc = _doc(VALID[name])
    validate_event(doc)
    decode_event(json.dumps(doc).encode())


@pytest.mark.parametrize("name", list(INVALID))
def test_both_reject(name: str) -> None:
    doc = _doc(INVALID[name])
    with pytest.raises(EnvelopeError):
        validate_event(doc)
    with pytest.raises(EnvelopeError) as caught:
        decode_event(json.dumps(doc).encode())
    assert caught.value.problems and all(field for field, _ in caught.value.problems)


def test_unknown_fields_are_ignored_by_the_router_only() -> None:
    doc = _doc(_set("payload.added_later", {"x": 1}))
    with pytest.raises(EnvelopeError):
        validate_event(doc)
    assert decode_event(json.dumps(doc).encode()).payload.type == "message.received"


@pytest.mark.parametrize("raw", [b"", b"not json", b"[" * 100_000, b'{"header": NaN}', b"null"])
def test_garbage_is_an_envelope_error_never_a_crash(raw: bytes) -> None:
    with pytest.raises(EnvelopeError):
        decode_event(raw)


def test_the_field_is_named() -> None:
    with pytest.raises(EnvelopeError) as caught:
        decode_event(json.dumps(_doc(_set("payload.bot", 7))).encode())
    assert caught.value.problems[0][0] == "payload.bot"
