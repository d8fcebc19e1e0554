"""For any signal, the mapping either rejects it with a reason or yields a valid event that a
second delivery would yield identically."""

from __future__ import annotations

import msgspec
from hypothesis import given, settings

from services.event_bridge.mapping import Rejected, map_signal
from shared.contracts.signals import Signal, decode_signal, encode_signal
from shared.contracts.subjects import app_token
from shared.contracts.validation import validate_event
from shared.errors import SubjectError
from tests.unit.event_bridge.signals import any_signals


def _token(app: str) -> str:
    try:
        return app_token(app)
    except SubjectError:
        return "some_app"


@given(any_signals)
@settings(max_examples=400, deadline=None)
def test_any_signal_is_rejected_with_a_reason_or_becomes_a_valid_event(signal: Signal) -> None:
    outcome = map_signal(signal, subject_app_token=_token(signal.app))
    if isinstance(outcome, Rejected):
        assert outcome.reason
        return
    wire = msgspec.json.encode(outcome)
    edge = validate_event(wire)
    assert edge.header.source.app == signal.app
    assert edge.header.source.instance == signal.instance
    # A redelivered signal (read back from the wire) gives the very same event bytes.
    again = map_signal(decode_signal(encode_signal(signal)), subject_app_token=_token(signal.app))
    assert not isinstance(again, Rejected)
    assert msgspec.json.encode(again) == wire
