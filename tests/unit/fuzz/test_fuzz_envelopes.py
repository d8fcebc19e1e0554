"""Fuzzing the envelope edges: every decoder a message meets on its way in answers with a value
or its typed rejection — whose reason names the field — never another exception, never a hang.

Edges: the bridge (signal decoding, then mapping to an event), the strict edge models, the
router's event reader, the runner's run reader and the gateway's tool-call reader. What each
accepts must read back the same (valid inputs round-trip).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.event_bridge.mapping import Rejected, map_signal
from services.router.events import decode_event
from shared.contracts.envelope import EventEnvelope
from shared.contracts.run import RunEnvelope, decode_run
from shared.contracts.signals import Signal, decode_signal, encode_signal
from shared.contracts.toolcall import ToolCallEnvelope, decode_request, encode
from shared.contracts.validation import validate_event, validate_native_event
from shared.errors import EnvelopeError, SubjectError
from shared.subjects import app_token
from tests.unit.contracts.strategies import envelopes
from tests.unit.fuzz.strategies import Mutation, any_json, documents, mutated

# Bounded and reproducible: the default suite runs these in seconds, the same examples each
# time; the deadline is what "no hang" means per example (generous: the machine is shared).
FUZZ = settings(max_examples=40, deadline=2000, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_DEEP = b"[" * 100_000 + b"]" * 100_000  # deeper than any recursive parser goes
# Found by this file: nesting this deep made msgspec raise RecursionError, which the gateway
# (no reply at all) and the runner (retried until dropped) did not expect.
DEEP_INPUTS = {
    "bare": _DEEP,
    "signal": b'{"kind": "native_event", "signal_id": "s", "app": "a", "observed_at": "x", "event": ' + _DEEP + b"}",
    "event": b'{"header": {}, "payload": {"type": "a", "data": {"x": ' + _DEEP + b"}}}",
    "call": b'{"header": {}, "payload": {"tool": "t", "arguments": {"a": ' + _DEEP + b"}}}",
}
_raw_inputs = st.binary(max_size=300) | any_json.map(lambda v: json.dumps(v).encode())


def _named(reason: str, mutation: Mutation) -> bool:
    """Whether a rejection of a near-valid document names the field that was changed."""
    return mutation.field is None or mutation.field in reason


# --------------------------------------------------------------------------- signals (bridge)

# A native app's event as it may send it: header fields left out or claimed, any payload.
_native_events = documents(EventEnvelope, method="aurora/event").map(
    lambda doc: {**doc, "header": {k: v for k, v in doc["header"].items() if k not in ("source",)}}
)
_signals = documents(Signal, event=_native_events)


def _token(app: str) -> str:
    try:
        return app_token(app)
    except SubjectError:
        return "some_app"


def _bridge(raw: bytes) -> EventEnvelope | Rejected | msgspec.DecodeError:
    """What the bridge does with one signal's bytes: decode, then map (or the decode error)."""
    try:
        signal = decode_signal(raw)
    except msgspec.DecodeError as exc:  # the bridge dead-letters it as a malformed signal
        assert str(exc)
        return exc
    outcome = map_signal(signal, subject_app_token=_token(signal.app))
    if isinstance(outcome, Rejected):
        assert outcome.reason.strip()
        return outcome
    # Whatever the bridge publishes, every reader takes: the strict edge model and the router,
    # which read it back exactly as it was written.
    wire = msgspec.json.encode(outcome)
    validate_event(wire)
    assert decode_event(wire) == outcome
    again = map_signal(decode_signal(encode_signal(signal)), subject_app_token=_token(signal.app))
    assert again == outcome  # a redelivered signal is the very same event
    return outcome


@FUZZ
@given(_raw_inputs)
def test_arbitrary_bytes_are_a_signal_or_a_decode_error(raw: bytes) -> None:
    _bridge(raw)


@FUZZ
@given(_signals)
def test_valid_signals_become_an_event_or_a_reasoned_rejection(doc: dict[str, Any]) -> None:
    outcome = _bridge(json.dumps(doc).encode())
    assert not isinstance(outcome, msgspec.DecodeError), outcome  # the model's documents decode


@FUZZ
@given(mutated(_signals))
def test_near_valid_signals_are_rejected_naming_the_field(case: tuple[dict[str, Any], Mutation]) -> None:
    doc, mutation = case
    outcome = _bridge(json.dumps(doc).encode())
    if isinstance(outcome, msgspec.DecodeError) and mutation.how != "unknown_key":
        assert _named(str(outcome), mutation) or "kind" in str(outcome), (str(outcome), mutation)
    if isinstance(outcome, Rejected) and mutation.how != "unknown_key":
        # Only a change to a signal that was fine before must be what the reason names.
        before = _bridge(json.dumps(mutation.original).encode())
        if not isinstance(before, Rejected | msgspec.DecodeError):
            assert _named(outcome.reason, mutation), (outcome.reason, mutation)


# --------------------------------------------------------------------------- events (edge models, router)


def _edge(raw: bytes) -> Any:
    try:
        return validate_event(raw)
    except EnvelopeError as exc:
        assert exc.problems and all(field and reason for field, reason in exc.problems), exc.problems
        return exc


def _router(raw: bytes) -> EventEnvelope | EnvelopeError:
    try:
        event = decode_event(raw)
    except EnvelopeError as exc:  # the router dead-letters it as invalid_event
        assert exc.problems and all(field and reason for field, reason in exc.problems), exc.problems
        return exc
    assert decode_event(msgspec.json.encode(event)) == event
    return event


@FUZZ
@given(_raw_inputs)
def test_arbitrary_bytes_are_an_event_or_an_envelope_error(raw: bytes) -> None:
    _edge(raw)
    _router(raw)
    try:
        validate_native_event(raw)
    except EnvelopeError as exc:
        assert exc.problems


@FUZZ
@given(envelopes())
def test_valid_events_round_trip_through_every_reader(doc: dict[str, Any]) -> None:
    raw = json.dumps(doc).encode()
    edge, hot = _edge(raw), _router(raw)
    assert not isinstance(edge, EnvelopeError), edge
    assert not isinstance(hot, EnvelopeError), hot
    assert msgspec.to_builtins(hot) == edge.model_dump()


@FUZZ
@given(mutated(envelopes()))
def test_near_valid_events_are_rejected_naming_the_field(case: tuple[dict[str, Any], Mutation]) -> None:
    doc, mutation = case
    raw = json.dumps(doc).encode()
    edge, hot = _edge(raw), _router(raw)
    for outcome in (edge, hot):
        if isinstance(outcome, EnvelopeError):
            assert _named(str(outcome), mutation), (str(outcome), mutation)
    # An unknown key is a typo the edge must catch (the hot path tolerates it), except inside
    # `payload.data`, which is the app's own.
    in_data = mutation.path[:2] == ("payload", "data") and len(mutation.path) > 2
    if mutation.how == "unknown_key" and not in_data:
        assert isinstance(edge, EnvelopeError)
    if not isinstance(edge, EnvelopeError) and not isinstance(hot, EnvelopeError):
        assert msgspec.to_builtins(hot) == edge.model_dump()  # both accept: they read it alike


# --------------------------------------------------------------------------- runs (runner) and tool calls (gateway)

_runs = documents(RunEnvelope, method=st.sampled_from(["agent/run", "pipeline/run"]))
_calls = documents(ToolCallEnvelope, method="tools/call")


def _run(raw: bytes) -> RunEnvelope | msgspec.DecodeError:
    try:
        run = decode_run(raw)
    except msgspec.DecodeError as exc:  # the runner dead-letters it as an invalid run
        assert str(exc)
        return exc
    assert decode_run(msgspec.json.encode(run)) == run
    return run


def _call(raw: bytes) -> ToolCallEnvelope | msgspec.DecodeError:
    try:
        call = decode_request(raw)
    except msgspec.DecodeError as exc:  # the gateway answers `denied` / `invalid_request`
        assert str(exc)
        return exc
    assert decode_request(encode(call)) == call
    return call


@FUZZ
@given(_raw_inputs)
def test_arbitrary_bytes_are_a_run_or_call_or_a_decode_error(raw: bytes) -> None:
    _run(raw)
    _call(raw)


@FUZZ
@given(_runs, _calls)
def test_valid_runs_and_calls_round_trip(run: dict[str, Any], call: dict[str, Any]) -> None:
    assert not isinstance(_run(json.dumps(run).encode()), msgspec.DecodeError)
    assert not isinstance(_call(json.dumps(call).encode()), msgspec.DecodeError)


@FUZZ
@given(mutated(_runs))
def test_near_valid_runs_are_rejected_naming_the_field(case: tuple[dict[str, Any], Mutation]) -> None:
    doc, mutation = case
    outcome = _run(json.dumps(doc).encode())
    if isinstance(outcome, msgspec.DecodeError) and mutation.how != "unknown_key":
        assert _named(str(outcome), mutation), (str(outcome), mutation)


@FUZZ
@given(mutated(_calls))
def test_near_valid_calls_are_rejected_naming_the_field(case: tuple[dict[str, Any], Mutation]) -> None:
    doc, mutation = case
    outcome = _call(json.dumps(doc).encode())
    if isinstance(outcome, msgspec.DecodeError) and mutation.how != "unknown_key":
        assert _named(str(outcome), mutation), (str(outcome), mutation)


@pytest.mark.parametrize("raw", list(DEEP_INPUTS.values()), ids=list(DEEP_INPUTS))
def test_nesting_too_deep_is_a_typed_rejection_at_every_edge(raw: bytes) -> None:
    assert isinstance(_bridge(raw), msgspec.DecodeError)
    assert isinstance(_edge(raw), EnvelopeError)
    assert isinstance(_router(raw), EnvelopeError)
    with pytest.raises(EnvelopeError):
        validate_native_event(raw)
    assert isinstance(_run(raw), msgspec.DecodeError)
    assert isinstance(_call(raw), msgspec.DecodeError)
