"""Spans where a service is wired: around the handling of one message and around the calls
it makes, each continuing the W3C trace the message carries.

Two shapes:
- `handling(name, trace)` — a message arrived carrying `trace` (its envelope's, or its NATS
  `traceparent` header): the span is that trace's child, and is current until it ends;
- `calling(name, fallback)` — the current span makes a call (a model, a tool): the span is its
  child.
Both yield a `SpanHandle` whose `.trace` is what outgoing messages carry, and which takes
attributes known only later (the binding chosen, the tokens used).

With no exporter configured (no `OTEL_*` export variable, see `shared.observability.trace_context`) nothing is
created at all: `.trace` is the incoming trace (or `fallback`) unchanged, so messages carry
exactly what they carried before, at no cost.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager

import msgspec
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from shared.contracts.envelope import Trace
from shared.observability.trace_context import PinnedIds, context_from_trace
from shared.observability.trace_context import tracing_enabled as tracing_enabled  # re-exported: services ask here

AttributeValue = str | bool | int | float
Attributes = Mapping[str, AttributeValue | None]


class SpanHandle:
    """The span being recorded (or nothing, when tracing is off) and the trace to send on."""

    def __init__(self, span: Span | None, fallback: Trace | None) -> None:
        self._span = span
        self._fallback = fallback

    @property
    def recording(self) -> bool:
        """False when tracing is off: attributes would go nowhere, so need not be worked out."""
        return self._span is not None

    @property
    def trace(self) -> Trace | None:
        if self._span is None:
            return self._fallback
        return trace_of(self._span.get_span_context()) or self._fallback

    def set(self, key: str, value: AttributeValue | None) -> None:
        if self._span is not None and value is not None:
            self._span.set_attribute(key, value)

    def update(self, attributes: Attributes) -> None:
        for key, value in attributes.items():
            self.set(key, value)

    def rename(self, name: str) -> None:
        if self._span is not None:
            self._span.update_name(name)

    def error(self, description: str) -> None:
        """The work failed without an exception (a refused call, a failed run)."""
        if self._span is not None:
            self._span.set_status(Status(StatusCode.ERROR, description[:200]))


def trace_of(context: SpanContext) -> Trace | None:
    if not context.is_valid:
        return None
    flags = "01" if context.trace_flags & TraceFlags.SAMPLED else "00"
    state = context.trace_state.to_header() if context.trace_state else ""
    return Trace(traceparent=f"00-{context.trace_id:032x}-{context.span_id:016x}-{flags}", tracestate=state or None)


class _HeaderTrace(msgspec.Struct):
    trace: Trace | None = None


class _EnvelopeTrace(msgspec.Struct):
    header: _HeaderTrace


_envelope_trace = msgspec.json.Decoder(_EnvelopeTrace)


def envelope_trace(data: bytes) -> Trace | None:
    """The trace an AMP envelope carries, read without decoding the rest (None when `data` is
    not an envelope: whoever decodes it says why)."""
    try:
        return _envelope_trace.decode(data).header.trace
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def current_headers() -> dict[str, str] | None:
    """NATS headers carrying the current span (None with tracing off or no span)."""
    value = current_trace()
    if value is None or value.traceparent is None:
        return None
    headers = {"traceparent": value.traceparent}
    if value.tracestate:
        headers["tracestate"] = value.tracestate
    return headers


def headers_trace(headers: Mapping[str, str] | None) -> Trace | None:
    """The trace in a message's NATS headers, if any."""
    traceparent = (headers or {}).get("traceparent")
    return Trace(traceparent=traceparent, tracestate=(headers or {}).get("tracestate")) if traceparent else None


def current_trace() -> Trace | None:
    """The trace of the current span, if one is being recorded."""
    return trace_of(trace.get_current_span().get_span_context()) if tracing_enabled() else None


def handling(name: str, incoming: Trace | None, *, kind: SpanKind = SpanKind.CONSUMER,
             attributes: Attributes | None = None, span_id: int | None = None,
             trace_id: int | None = None) -> AbstractContextManager[SpanHandle]:
    """A span for handling one message that carried `incoming` (None: a new trace).

    `span_id` (and `trace_id`, for a new trace) pin the span's ids: the bridge derives them
    from the event's message id, so a redelivered signal becomes byte-identical again."""
    if not tracing_enabled():
        return _Untraced(incoming)
    parent = context_from_trace(incoming) if incoming is not None else otel_context.Context()
    return _span(name, parent, kind, attributes, PinnedIds.pin(trace_id, span_id), incoming)


def calling(name: str, fallback: Trace | None = None, *, kind: SpanKind = SpanKind.CLIENT,
            attributes: Attributes | None = None) -> AbstractContextManager[SpanHandle]:
    """A span for a call the current span makes; off: `.trace` is `fallback`."""
    if not tracing_enabled():
        return _Untraced(fallback)
    parent = otel_context.get_current()
    if not trace.get_current_span(parent).get_span_context().is_valid and fallback is not None:
        parent = context_from_trace(fallback)
    return _span(name, parent, kind, attributes, PinnedIds.pin(None, None), fallback)


class _Untraced(SpanHandle, AbstractContextManager["_Untraced"]):
    """What `handling` and `calling` give with tracing off: its own handle, entered and left for
    nothing. A class, not a generator context manager (about seven Python calls to enter and
    leave, where this takes four): a tool call passes two of them on its path."""

    def __init__(self, fallback: Trace | None) -> None:
        super().__init__(None, fallback)

    def __enter__(self) -> _Untraced:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


@contextmanager
def _span(name: str, parent: otel_context.Context, kind: SpanKind, attributes: Attributes | None,
          pinned: AbstractContextManager[None], fallback: Trace | None) -> Iterator[SpanHandle]:
    tracer = trace.get_tracer("aurora")
    with pinned:
        span = tracer.start_span(name, context=parent, kind=kind,
                                 attributes={k: v for k, v in (attributes or {}).items() if v is not None})
    token = otel_context.attach(trace.set_span_in_context(span, parent))
    try:
        yield SpanHandle(span, fallback)
    except BaseException as exc:
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"[:200]))
        raise
    finally:
        otel_context.detach(token)
        span.end()


def messaging(operation: str, destination: str, message_id: str | None = None) -> dict[str, AttributeValue | None]:
    """The OpenTelemetry messaging attributes of a NATS message handled (`process`) or sent
    (`send`)."""
    return {
        "messaging.system": "nats",
        "messaging.operation.name": operation,
        "messaging.operation.type": operation if operation in ("send", "receive", "process") else None,
        "messaging.destination.name": destination,
        "messaging.message.id": message_id,
    }
