"""W3C trace context: a root trace derived from an event's message id, and the headers."""

from __future__ import annotations

import re

import pytest
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from shared.contracts.envelope import Trace
from shared.errors import SettingsError
from shared.observability import tracing
from shared.observability.trace_context import context_from_trace, inject_headers, root_trace, span_processors

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


def test_export_is_configured_only_by_the_standard_variables() -> None:
    assert span_processors({}) == []  # nothing set: no export, and no span is ever made
    assert span_processors({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
                            "OTEL_TRACES_EXPORTER": "none"}) == []
    assert span_processors({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318",
                            "OTEL_SDK_DISABLED": "true"}) == []
    [otlp] = span_processors({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"})
    assert isinstance(otlp, BatchSpanProcessor)
    assert len(span_processors({"OTEL_TRACES_EXPORTER": "otlp,console"})) == 2


def test_a_bad_exporter_setting_names_the_variable() -> None:
    with pytest.raises(SettingsError, match="OTEL_TRACES_EXPORTER='zipkin'"):
        span_processors({"OTEL_TRACES_EXPORTER": "zipkin"})
    with pytest.raises(SettingsError, match="OTEL_EXPORTER_OTLP_PROTOCOL='thrift'"):
        span_processors({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "thrift"})
    with pytest.raises(SettingsError, match="otlp-grpc"):  # the gRPC exporter is an extra
        span_processors({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})


def test_with_tracing_off_a_handled_message_carries_its_trace_unchanged() -> None:
    incoming = Trace(traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    assert not tracing.tracing_enabled()
    with tracing.handling("process signal", incoming) as span:
        assert span.trace is incoming
        with tracing.calling("tools/call x", incoming) as call:
            assert call.trace is incoming
    assert tracing.current_headers() is None
