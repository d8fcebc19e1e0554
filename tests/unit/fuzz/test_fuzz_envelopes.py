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
from hypothesis import given
from hypothesis import strategies as st

from services.event_bridge.mapping import Rejected, map_signal
from services.router.events import decode_event
from shared.contracts.envelope import EventEnvelope
from shared.contracts.run import RunEnvelope, decode_run
from shared.contracts.signals import Signal, decode_signal, encode_signal
from shared.contracts.subjects import app_token
from shared.contracts.toolcall import ToolCallEnvelope, decode_request, encode
from shared.contracts.validation import validate_event, validate_native_event
from shared.errors import EnvelopeError, SubjectError
from tests.unit.contracts.strategies import envelopes
from tests.unit.fuzz.strategies import FUZZ, Mutation, any_json, documents, every_change, mutated, native_events

# Bounded and reproducible: the default suite runs these in seconds, the same examples each
# time; the deadline is what "no hang" means per example (generous: the machine is shared).

_DEEP = b"[" * 100_000 + b"]" * 100_000  # deeper than any recursive parser goes
# Found by this file: nesting this deep made msgspec raise RecursionError, which the gateway
# (no reply at all) and the runner (retried until dropped) did not expect.
DEEP_INPUTS = {
    "bare": _DEEP,
    "signal": b'{"kind": "native_event", "signal_id": "s", "app": "a", "observed_at": "x", "event": ' + _DEEP + b"}",
    "event": b'{"header": {}, "payload": {"type": "a", "data": {"x": ' + _DEEP + b"}}}",
    "call": b'{"header": {}, "payload": {"tool": "t", "arguments": {"a": ' + _DEEP + b"}}}",
}
# One complete event (every field set) and one signal of each kind, for the exhaustive tests.
FULL_EVENT: dict[str, Any] = {
    "header": {"protocol": "amp/1.0", "method": "aurora/event", "message_id": "m-1",
               "timestamp": "2026-06-19T12:00:00+08:00", "source": {"app": "im.polaris.qq", "instance": "default"},
               "trace": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
                         "tracestate": "a=1"}},
    "payload": {"type": "message.received", "session_id": "g-1", "summary": "hi", "data": {"text": "你好", "n": [1]},
                "expire_at": "2200-01-01T00:00:00Z", "bot": "b", "workspace": "w", "conversation": "c",
                "actor": {"id": "u-1", "kind": "user"}, "subject": {"kind": "message", "id": "m-9"},
                "source_event_type": "GroupMessage", "raw_ref": "r", "synthetic": False},
}
_BASE = {"signal_id": "s-1", "app": "im.polaris.qq", "instance": "default", "observed_at": "2026-06-19T12:00:00+08:00"}
SIGNALS: list[dict[str, Any]] = [
    {"kind": "lifecycle", **_BASE, "state": "process_exited", "reason": "r", "exit_code": 1, "detail": {"a": 1}},
    {"kind": "list_changed", **_BASE, "list": "tools"},
    {"kind": "tool_result", **_BASE, "tool": "t.x", "outcome": "failed", "status": "tool_error", "duration_ms": 3.5},
    {"kind": "resource_read", **_BASE, "uri": "file:///a", "mime_type": "text/plain", "size": 3, "text": "abc"},
    {"kind": "notification", **_BASE, "method": "notifications/acme/ping", "params": {"n": 1}},
    {"kind": "native_event", **_BASE, "event": {"header": {"message_id": "m-2"}, "payload": FULL_EVENT["payload"]}},
    {"kind": "platform_event", **_BASE, "app": "aurora.gateway", "type": "approval.requested", "data": {"id": "a"},
     "subject_kind": "approval", "subject_id": "a"},
]
_HEADER = {"protocol": "amp/1.0", "message_id": "r-1", "timestamp": "2026-06-19T12:00:00+08:00",
           "source": {"app": "aurora.router", "instance": "default"}}
FULL_RUN: dict[str, Any] = {
    "header": {**_HEADER, "method": "agent/run"},
    "payload": {"run_id": "r-1", "target": {"type": "agent", "id": "welcome"}, "binding_id": "b", "event": FULL_EVENT,
                "event_ref": {"bucket": "AMP_RUN_EVENTS", "name": "r-1", "size": 10},
                "delivery": {"reply_target": {"app": "im.polaris.qq", "session_id": "g-1"}, "capabilities": ["reply"]},
                "synthetic": False},
}
FULL_CALL: dict[str, Any] = {
    "header": {**_HEADER, "method": "tools/call"},
    "payload": {"tool": "weather.get", "arguments": {"city": "北京", "days": 3},
                "context": {"agent": "welcome", "run_id": "r-1", "task_id": "t-1", "session_id": "g-1",
                            "actor": {"id": "u-1", "kind": "user"}, "approval_id": None, "idempotency_key": "k",
                            "synthetic": False, "delivery": None},
                "timeout_seconds": 5.0},
}
_raw_inputs = st.binary(max_size=300) | any_json.map(lambda v: json.dumps(v).encode())


def _named(reason: str, mutation: Mutation) -> bool:
    """Whether a rejection of a near-valid document names the field that was changed."""
    return mutation.field is None or mutation.field in reason


def _related(field: str, where: str) -> bool:
    return field == where or field.startswith(where + ".") or where.startswith(field + ".")


# --------------------------------------------------------------------------- signals (bridge)

# A native app's event as it may send it: header fields left out or claimed, any payload.
_signals = documents(Signal, event=native_events)


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


def _check_changed_event(doc: dict[str, Any], mutation: Mutation) -> None:
    raw = json.dumps(doc).encode()
    edge, hot = _edge(raw), _router(raw)
    where = ".".join(str(part) for part in mutation.path)
    for outcome in (edge, hot):
        if isinstance(outcome, EnvelopeError) and mutation.how != "unknown_key":
            # Some problem is about the changed field: it, a part of it, or what holds it.
            problems = outcome.problems
            assert any(_related(field, where) or (field == "(root)" and _named(reason, mutation))
                       for field, reason in problems), (problems, mutation)
    # An unknown key is a typo the edge must catch (the hot path tolerates it), except inside
    # `payload.data`, which is the app's own.
    in_data = mutation.path[:2] == ("payload", "data") and len(mutation.path) > 2
    if mutation.how == "unknown_key" and not in_data:
        assert isinstance(edge, EnvelopeError)
    if not isinstance(edge, EnvelopeError) and not isinstance(hot, EnvelopeError):
        assert msgspec.to_builtins(hot) == edge.model_dump()  # both accept: they read it alike


@FUZZ
@given(mutated(envelopes()))
def test_near_valid_events_are_rejected_naming_the_field(case: tuple[dict[str, Any], Mutation]) -> None:
    _check_changed_event(*case)


def test_every_single_change_to_an_event_is_read_alike_or_refused_naming_the_field() -> None:
    for doc, mutation in every_change(FULL_EVENT):
        _check_changed_event(doc, mutation)


def test_every_single_change_to_a_signal_is_an_event_or_refused_naming_the_field() -> None:
    for signal in SIGNALS:
        for doc, mutation in every_change(signal):
            outcome = _bridge(json.dumps(doc).encode())
            if mutation.how == "unknown_key" or not isinstance(outcome, Rejected | msgspec.DecodeError):
                continue
            reason = str(outcome) if isinstance(outcome, msgspec.DecodeError) else outcome.reason
            assert _named(reason, mutation) or "kind" in reason, (reason, mutation)


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


@pytest.mark.parametrize(("doc", "read"), [(FULL_RUN, _run), (FULL_CALL, _call)], ids=["run", "call"])
def test_every_single_change_to_a_run_or_call_is_read_or_refused_naming_the_field(
        doc: dict[str, Any], read: Any) -> None:
    assert not isinstance(read(json.dumps(doc).encode()), msgspec.DecodeError)
    for changed, mutation in every_change(doc):
        outcome = read(json.dumps(changed).encode())
        if isinstance(outcome, msgspec.DecodeError) and mutation.how != "unknown_key":
            assert _named(str(outcome), mutation), (str(outcome), mutation)
