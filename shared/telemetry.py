"""OpenTelemetry set-up and W3C trace context carried in NATS headers and in the envelope."""

from __future__ import annotations

import hashlib
import os

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from shared.contracts.envelope import Trace

_propagator = TraceContextTextMapPropagator()
_configured = False


def setup_tracing(service: str) -> None:
    """Install a tracer provider once per process; spans go to the console only when
    AURORA_TRACE_CONSOLE=1 (an OTLP exporter can be added by the deployment)."""
    global _configured
    if not _configured:
        provider = TracerProvider(resource=Resource.create({"service.name": f"aurora-{service}"}))
        if os.environ.get("AURORA_TRACE_CONSOLE") == "1":
            provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter()))
        trace.set_tracer_provider(provider)
        _configured = True


def inject_headers(headers: dict[str, str] | None = None, ctx: Context | None = None) -> dict[str, str]:
    """Add `traceparent` (and `tracestate`) of the current span to NATS headers."""
    carrier: dict[str, str] = dict(headers or {})
    _propagator.inject(carrier, context=ctx)
    return carrier


def root_trace(message_id: str) -> Trace:
    """A new W3C trace for an event that arrives without one, derived from its message id: a
    redelivered signal becomes the very same event (same bytes, same trace), and every run,
    tool call and `tool.*` event it causes carries this trace id on."""
    digest = hashlib.sha256(message_id.encode()).hexdigest()
    trace_id, span_id = digest[:32], digest[32:48]
    if int(trace_id, 16) == 0 or int(span_id, 16) == 0:  # all-zero ids are invalid in W3C
        trace_id, span_id = "1" + trace_id[1:], "1" + span_id[1:]
    return Trace(traceparent=f"00-{trace_id}-{span_id}-01")


def context_from_trace(value: Trace | None) -> Context:
    if value is None or value.traceparent is None:
        return otel_context.get_current()
    carrier = {"traceparent": value.traceparent}
    if value.tracestate:
        carrier["tracestate"] = value.tracestate
    return _propagator.extract(carrier)
