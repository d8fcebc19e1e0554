"""Whatever arrives, validation answers with an envelope or an EnvelopeError, never a crash;
and whatever the edge accepts, the hot path reads the same way."""

from __future__ import annotations

import contextlib
import copy
import json
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.contracts.envelope import EventEnvelope
from shared.contracts.validation import AmpEvent, validate_event, validate_native_event
from shared.errors import EnvelopeError
from tests.unit.contracts.strategies import envelopes, json_values

# Raw JSON text, including what only lenient parsers accept.
_json_ish = st.recursive(
    st.sampled_from(["null", "true", "false", "0", "-1.5e3", "NaN", "Infinity", "1e999", '"x"',
                     '"\\ud800"', "18446744073709551616"]),
    lambda inner: st.lists(inner, max_size=3).map(lambda xs: "[" + ",".join(xs) + "]")
    | st.lists(st.tuples(st.sampled_from(["header", "payload", "type", "data", "k"]), inner),
               max_size=3).map(lambda kv: "{" + ",".join(f'"{k}":{v}' for k, v in kv) + "}"),
    max_leaves=10,
)


def _check(raw: bytes | str | dict[str, Any]) -> AmpEvent | None:
    try:
        edge = validate_event(raw)
    except EnvelopeError as exc:
        assert exc.problems and all(isinstance(f, str) and r for f, r in exc.problems)
        return None
    # Accepted by the edge ⇒ written and read by the hot path with the very same values.
    hot = msgspec.json.decode(edge.model_dump_json(), type=EventEnvelope)
    assert msgspec.to_builtins(hot) == edge.model_dump()
    return edge


@given(st.binary(max_size=200))
def test_random_bytes_never_crash(raw: bytes) -> None:
    _check(raw)
    with contextlib.suppress(EnvelopeError):
        validate_native_event(raw)


@given(st.text(max_size=100))
def test_random_text_never_crashes(raw: str) -> None:
    _check(raw)


@given(json_values)
def test_random_json_never_crashes(value: Any) -> None:
    assert _check(json.dumps(value)) is None  # a random value is never a whole envelope
    if isinstance(value, dict):
        assert _check(value) is None


@given(envelopes(), _json_ish)
@settings(deadline=None)
def test_lenient_json_spellings_in_an_envelope_are_errors_or_read_alike(
    envelope: dict[str, Any], text: str
) -> None:
    envelope["payload"]["data"] = {"v": "__value__"}
    _check(json.dumps(envelope).replace('"__value__"', text))


_PATHS = [
    "header", "payload", "header.protocol", "header.method", "header.message_id",
    "header.timestamp", "header.source", "header.source.app", "header.source.instance",
    "header.trace", "payload.type", "payload.data", "payload.expire_at", "payload.actor",
    "payload.subject", "payload.synthetic", "payload.session_id",
]


@given(envelopes(), st.sampled_from(_PATHS), st.none() | json_values, st.booleans())
@settings(max_examples=150, deadline=None)
def test_a_mutated_envelope_is_valid_or_an_error_naming_the_mutated_field(
    envelope: dict[str, Any], path: str, value: Any, delete: bool
) -> None:
    mutated = copy.deepcopy(envelope)
    *parents, last = path.split(".")
    node = mutated
    for part in parents:
        if not isinstance(node.get(part), dict):
            return
        node = node[part]
    if delete:
        node.pop(last, None)
    else:
        node[last] = value
    try:
        edge = validate_event(json.dumps(mutated))
    except EnvelopeError as exc:
        fields = {f for f, _ in exc.problems}
        assert all(f == path or f.startswith(path + ".") for f in fields), (fields, path)
        return
    assert _check(edge.model_dump_json()) == edge
