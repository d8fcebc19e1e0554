"""The envelope's two forms (pydantic at the edges, msgspec on the hot path) speak the same JSON."""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared.contracts.envelope import EventEnvelope
from shared.contracts.validation import AmpEvent, validate_event
from tests.unit.contracts.examples import FULL, MINIMAL
from tests.unit.contracts.strategies import envelopes


def _msgspec_bytes(raw: bytes) -> bytes:
    return msgspec.json.encode(msgspec.json.decode(raw, type=EventEnvelope))


def test_the_seed_envelope_is_identical_through_pydantic_msgspec_and_json() -> None:
    wire = json.dumps(FULL, ensure_ascii=False).encode()
    edge = validate_event(wire)
    assert edge.model_dump(mode="json") == FULL
    hot = msgspec.json.decode(edge.model_dump_json(), type=EventEnvelope)
    assert msgspec.to_builtins(hot) == FULL
    assert validate_event(msgspec.json.encode(hot)) == edge
    # Same bytes from both encoders, so either side may write the wire.
    assert msgspec.json.encode(hot) == edge.model_dump_json().encode()


def test_defaults_are_filled_the_same_way_by_both_forms() -> None:
    raw = json.dumps(MINIMAL).encode()
    edge = validate_event(raw)
    assert edge.header.protocol == "amp/1.0" and edge.header.method == "aurora/event"
    assert edge.header.source.instance == "default"
    assert edge.payload.data == {} and edge.payload.synthetic is False
    # The hot path needs `method` on the wire; once the edge has written the envelope, it reads it.
    hot = msgspec.json.decode(edge.model_dump_json(), type=EventEnvelope)
    assert msgspec.json.encode(hot) == edge.model_dump_json().encode()


def test_the_hot_path_ignores_fields_it_does_not_know_while_the_edge_rejects_them() -> None:
    newer = copy.deepcopy(FULL)
    newer["payload"]["added_later"] = 1
    hot = msgspec.json.decode(json.dumps(newer), type=EventEnvelope)
    assert msgspec.to_builtins(hot) == FULL
    with pytest.raises(Exception, match=r"payload\.added_later"):
        validate_event(json.dumps(newer))


def test_all_three_input_forms_validate_alike() -> None:
    as_dict = validate_event(FULL)
    assert validate_event(json.dumps(FULL)) == as_dict
    assert validate_event(json.dumps(FULL).encode()) == as_dict
    assert isinstance(as_dict, AmpEvent)


@given(envelopes())
@settings(max_examples=200, deadline=None)
def test_random_envelopes_round_trip_to_identical_dicts(envelope: dict[str, Any]) -> None:
    wire = json.dumps(envelope).encode()
    edge = validate_event(wire)
    assert edge.model_dump(mode="json") == envelope
    hot = msgspec.json.decode(wire, type=EventEnvelope)
    assert msgspec.to_builtins(hot) == envelope
    assert msgspec.json.decode(_msgspec_bytes(wire)) == envelope
    assert json.loads(edge.model_dump_json()) == envelope
    assert validate_event(msgspec.json.encode(hot)) == edge


def _without_floats(value: Any) -> bool:
    if isinstance(value, float):
        return False
    if isinstance(value, dict):
        return all(_without_floats(v) for v in value.values())
    if isinstance(value, list):
        return all(_without_floats(v) for v in value)
    return True


@given(envelopes().filter(lambda e: _without_floats(e["payload"]["data"])))
@settings(max_examples=100, deadline=None)  # the filter rejects many: 100 kept cost as much as 200 above
def test_random_envelopes_encode_to_identical_bytes(envelope: dict[str, Any]) -> None:
    # Floats are left out: both encoders write the same value, but in different spellings
    # (`1e+16` from pydantic, `1e16` from msgspec); the dict test above covers their values.
    edge = validate_event(envelope)
    hot = msgspec.json.decode(edge.model_dump_json(), type=EventEnvelope)
    assert msgspec.json.encode(hot) == edge.model_dump_json().encode()


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_float_values_survive_both_encoders(value: float) -> None:
    envelope = copy.deepcopy(FULL)
    envelope["payload"]["data"] = {"x": value}
    edge = validate_event(envelope)
    hot = msgspec.json.decode(edge.model_dump_json(), type=EventEnvelope)
    assert json.loads(msgspec.json.encode(hot))["payload"]["data"]["x"] == value
