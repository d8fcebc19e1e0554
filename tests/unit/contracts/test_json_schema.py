"""The exported JSON Schema says what the pydantic model enforces."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from jsonschema import Draft202012Validator

from shared.contracts.validation import AmpEvent, validate_event
from shared.errors import EnvelopeError
from tests.unit.contracts.examples import FULL, MINIMAL
from tests.unit.contracts.strategies import envelopes

SCHEMA = AmpEvent.model_json_schema()
VALIDATOR = Draft202012Validator(SCHEMA)


def test_the_schema_itself_is_valid() -> None:
    Draft202012Validator.check_schema(SCHEMA)
    assert SCHEMA["additionalProperties"] is False


@pytest.mark.parametrize("good", [FULL, MINIMAL], ids=["full", "minimal"])
def test_a_good_envelope_passes(good: dict[str, Any]) -> None:
    assert list(VALIDATOR.iter_errors(good)) == []


def _bad_cases() -> list[tuple[str, dict[str, Any]]]:
    cases = []
    for name, path, value in [
        ("missing type", "payload.type", None),
        ("wrong type", "payload.synthetic", "yes"),
        ("bad app id", "header.source.app", "has space"),
        ("bad event type", "payload.type", "Message"),
        ("bad actor kind", "payload.actor.kind", "robot"),
        ("unknown key", "payload.extra", 1),
        ("wrong protocol", "header.protocol", "amp/0.9"),
    ]:
        envelope = copy.deepcopy(FULL)
        *parents, last = path.split(".")
        node = envelope
        for part in parents:
            node = node[part]
        if value is None:
            del node[last]
        else:
            node[last] = value
        cases.append((name, envelope))
    return cases


@pytest.mark.parametrize(("name", "bad"), _bad_cases(), ids=[n for n, _ in _bad_cases()])
def test_a_bad_envelope_is_rejected_by_schema_and_model(name: str, bad: dict[str, Any]) -> None:
    assert list(VALIDATOR.iter_errors(bad)), name
    with pytest.raises(EnvelopeError):
        validate_event(bad)


@given(envelopes())
@settings(max_examples=100, deadline=None)
def test_every_valid_envelope_passes_the_schema(envelope: dict[str, Any]) -> None:
    assert list(VALIDATOR.iter_errors(envelope)) == []
