"""W3C trace context: a root trace derived from an event's message id, and the headers."""

from __future__ import annotations

import re

from shared.contracts.envelope import Trace
from shared.telemetry import context_from_trace, inject_headers, root_trace

W3C = re.compile(r"^00-[0-9a-f]{32}-[0-9a-f]{16}-01$")


def test_a_root_trace_is_valid_w3c_and_the_same_for_the_same_event() -> None:
    first = root_trace("evt-1")
    assert first.traceparent is not None and W3C.fullmatch(first.traceparent)
    assert root_trace("evt-1") == first  # a redelivered signal becomes the very same event
    assert root_trace("evt-2").traceparent != first.traceparent


def test_a_trace_travels_into_headers_unchanged() -> None:
    trace = Trace(traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    headers = inject_headers({"Nats-Msg-Id": "x"}, context_from_trace(trace))
    assert headers == {"Nats-Msg-Id": "x", "traceparent": trace.traceparent}
