"""OpenTelemetry set-up and W3C trace context carried in NATS headers and in the envelope."""

from __future__ import annotations

import contextvars
import functools
import hashlib
import random
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from shared.contracts.envelope import Trace
from shared.errors import SettingsError

_propagator = TraceContextTextMapPropagator()


class PinnedIds(IdGenerator):
    """Random ids, except for a span started inside `pin(...)`, which gets the ids given there."""

    _pinned: contextvars.ContextVar[tuple[int | None, int | None]] = contextvars.ContextVar(
        "aurora_pinned_ids", default=(None, None))

    def __init__(self) -> None:
        self._random = random.SystemRandom()

    @classmethod
    @contextmanager
    def pin(cls, trace_id: int | None, span_id: int | None) -> Iterator[None]:
        token = cls._pinned.set((trace_id, span_id))
        try:
            yield
        finally:
            cls._pinned.reset(token)

    def generate_trace_id(self) -> int:
        pinned = self._pinned.get()[0]
        return pinned if pinned else self._random.getrandbits(128) or 1

    def generate_span_id(self) -> int:
        pinned = self._pinned.get()[1]
        return pinned if pinned else self._random.getrandbits(64) or 1


def span_processors(env: Mapping[str, str]) -> list[SpanProcessor]:
    """The exporters the standard `OTEL_*` variables ask for; none → no span is ever created.

    Export is on when `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is
    set, or `OTEL_TRACES_EXPORTER` names `otlp` or `console`; `OTEL_TRACES_EXPORTER=none` or
    `OTEL_SDK_DISABLED=true` turn it off. The protocol is `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`
    or `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` (the default) or `grpc` (with the
    `otlp-grpc` extra installed). The exporters read the rest (headers, timeouts, batch
    delays) from the same variables themselves. `AURORA_TRACE_CONSOLE=1` is kept as a shorthand
    for `OTEL_TRACES_EXPORTER=console`.
    """
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    names = {n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "").split(",") if n.strip()}
    if "none" in names:
        return []
    if env.get("AURORA_TRACE_CONSOLE") == "1":
        names.add("console")
    if env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        names.add("otlp")
    unknown = names - {"otlp", "console"}
    if unknown:
        raise SettingsError("OTEL_TRACES_EXPORTER", env.get("OTEL_TRACES_EXPORTER", ""),
                            "otlp, console or none (comma-separated)")
    exporters: list[SpanExporter] = []
    if "otlp" in names:
        exporters.append(_otlp_exporter(env))
    if "console" in names:
        exporters.append(ConsoleSpanExporter())
    return [BatchSpanProcessor(exporter) for exporter in exporters]


def _otlp_exporter(env: Mapping[str, str]) -> SpanExporter:
    variable = ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" if env.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
                else "OTEL_EXPORTER_OTLP_PROTOCOL")
    protocol = (env.get(variable) or "http/protobuf").strip().lower()
    if protocol in ("http/protobuf", "http"):
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if protocol == "grpc":
        try:
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                OTLPSpanExporter as GrpcSpanExporter,
            )
        except ImportError as exc:
            raise SettingsError(variable, protocol, "http/protobuf, or grpc with the gRPC exporter installed "
                                "(pip install 'aurora[otlp-grpc]')") from exc
        return GrpcSpanExporter()  # type: ignore[no-any-return]
    raise SettingsError(variable, protocol, "http/protobuf or grpc")


def setup_tracing(service: str, env: Mapping[str, str]) -> None:
    """Install a tracer provider, once per process, when the `OTEL_*` variables of `env` (the
    settings', `Settings.telemetry`) ask for an exporter (`span_processors`); a bad value raises
    SettingsError naming the variable. Without one nothing is installed and no span is created."""
    if tracing_enabled():
        return
    processors = span_processors(env)
    if not processors:
        return
    provider = TracerProvider(resource=Resource.create({"service.name": f"aurora-{service}"}),
                              id_generator=PinnedIds())
    for processor in processors:
        provider.add_span_processor(processor)
    trace.set_tracer_provider(provider)
    tracing_enabled.cache_clear()


@functools.cache
def tracing_enabled() -> bool:
    """Whether `setup_tracing` installed an exporting provider. OpenTelemetry holds it (set once);
    the answer is cached because a tool call asks twice on its path (1 µs each uncached)."""
    return isinstance(trace.get_tracer_provider(), TracerProvider)


def shutdown_tracing() -> None:
    """Export what is still buffered (a stopping service's last spans)."""
    provider = trace.get_tracer_provider()
    if isinstance(provider, TracerProvider):
        provider.shutdown()


def inject_headers(headers: dict[str, str] | None = None, ctx: Context | None = None) -> dict[str, str]:
    """Add `traceparent` (and `tracestate`) of the current span to NATS headers."""
    carrier: dict[str, str] = dict(headers or {})
    _propagator.inject(carrier, context=ctx)
    return carrier


def derived_ids(message_id: str) -> tuple[int, int]:
    """A trace id and a span id derived from an event's message id (never all-zero)."""
    digest = hashlib.sha256(message_id.encode()).hexdigest()
    trace_id, span_id = digest[:32], digest[32:48]
    if int(trace_id, 16) == 0 or int(span_id, 16) == 0:  # all-zero ids are invalid in W3C
        trace_id, span_id = "1" + trace_id[1:], "1" + span_id[1:]
    return int(trace_id, 16), int(span_id, 16)


def root_trace(message_id: str) -> Trace:
    """A new W3C trace for an event that arrives without one, derived from its message id: a
    redelivered signal becomes the very same event (same bytes, same trace), and every run,
    tool call and `tool.*` event it causes carries this trace id on. With tracing on, the
    bridge's span for the event has exactly these ids (`shared.observability.tracing.handling`)."""
    trace_id, span_id = derived_ids(message_id)
    return Trace(traceparent=f"00-{trace_id:032x}-{span_id:016x}-01")


def context_from_trace(value: Trace | None) -> Context:
    if value is None or value.traceparent is None:
        return otel_context.get_current()
    carrier = {"traceparent": value.traceparent}
    if value.tracestate:
        carrier["tracestate"] = value.tracestate
    return _propagator.extract(carrier)
