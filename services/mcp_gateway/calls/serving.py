"""Serving tool calls off the gateway's endpoints: one task per call, a reply to every request.

A failure inside the gateway while a call is handled still gets an envelope reply
(`internal_error`, with an error id that the log line holding the traceback has too); its status
says whether the call may have been sent (see `progress`). The call is audited like any other.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager

import msgspec
from nats.micro.request import Request
from opentelemetry.trace import SpanKind

from services.mcp_gateway.calls import progress
from services.mcp_gateway.calls.caller import Endpoint, claimed_caller
from services.mcp_gateway.calls.pipeline import CallPipeline
from services.mcp_gateway.calls.record import CallRecord
from services.mcp_gateway.calls.replies import result_reply
from shared.contracts.signals import GATEWAY_APP
from shared.contracts.toolcall import ToolCallEnvelope, decode_request
from shared.nats import write_through
from shared.nats.admin_service import request_reply
from shared.nats.bus import is_jetstream_delivery
from shared.observability import metrics, tracing
from shared.observability.logs import get_logger
from shared.observability.tracing import messaging

log = get_logger("aurora.mcp_gateway")


class InFlight:
    """Counts calls being served, so shutdown can let them finish (bounded)."""

    def __init__(self) -> None:
        self.count = 0
        self.tasks: set[asyncio.Task[None]] = set()
        self.idle = asyncio.Event()
        self.idle.set()

    def enter(self) -> None:
        self.count += 1
        self.idle.clear()

    def leave(self) -> None:
        self.count -= 1
        if self.count == 0:
            self.idle.set()

    def track(self, task: asyncio.Task[None]) -> None:
        # Keep a reference until the task is done (the loop holds only weak ones).
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def wait_idle(self, grace: float) -> None:
        try:
            await asyncio.wait_for(self.idle.wait(), grace)
        except TimeoutError:
            log.warning("calls still in flight at shutdown", count=self.count)


class CallServer:
    """The handlers of the tool-call endpoints: each says which endpoint a call came in on, and
    the pipeline settles its caller from that (`calls.caller`), never from the body."""

    def __init__(self, handler: CallPipeline, in_flight: InFlight,
                 scrub_reply: Callable[[bytes], bytes] = lambda reply: reply) -> None:
        self._handler = handler
        self._in_flight = in_flight
        self._scrub_reply = scrub_reply  # no configured credential goes back to a caller

    # Called in nats-py's read loop (`add_inline_endpoint`): they only start the call's task.
    def tool_call(self, request: Request) -> None:
        self._dispatch(request, Endpoint.TOOL_CALL)

    def operator_call(self, request: Request) -> None:
        self._dispatch(request, Endpoint.OPERATOR)

    def person_call(self, request: Request) -> None:
        self._dispatch(request, Endpoint.PERSON)

    def edge_call(self, request: Request) -> None:
        self._dispatch(request, Endpoint.EDGE)

    def _dispatch(self, request: Request, endpoint: Endpoint) -> None:
        if is_jetstream_delivery(request_reply(request)):
            return
        # Each call gets its own task, or one slow tool would hold up every other call.
        self._in_flight.enter()
        self._in_flight.track(asyncio.create_task(self._serve(request, endpoint), name=endpoint.value))

    async def _serve(self, request: Request, endpoint: Endpoint) -> None:
        tracked = progress.track()  # in this task's own context: one per call
        try:
            with _call_span(request, endpoint) as span:
                try:
                    reply, record = await self._handler.answer(request.data, endpoint, request.subject)
                except Exception:
                    reply, record = self._internal_error(request, tracked, endpoint)
                if record is not None:
                    metrics.tool_call_duration.record((record.result.duration_ms or 0.0) / 1000, {
                        "tool": record.request.tool, "status": record.result.status})
                    if span.recording:
                        describe_call(span, record)
                        # The `tool.*` event of the call continues the gateway's span for it.
                        record = dataclasses.replace(record, trace=span.trace or record.trace)
            try:
                await write_through.respond(request, self._scrub_reply(reply))
                # The reply is written once this task yields: yielding now puts it on the wire
                # before the audit record is built (0.1 ms).
                await asyncio.sleep(0)
            except Exception as exc:
                log.warning("a tool call's reply could not be sent", error=f"{type(exc).__name__}: {exc}")
            finally:  # audited even when the answer cannot be sent; the caller does not wait for it
                await self._report(record)
        finally:
            self._in_flight.leave()

    def _internal_error(self, request: Request, tracked: progress.CallProgress,
                        endpoint: Endpoint) -> tuple[bytes, CallRecord | None]:
        """Called inside the `except` of a failed answer: logs the traceback under a new error id."""
        error_id = progress.new_error_id()
        envelope: ToolCallEnvelope | None = None
        with contextlib.suppress(msgspec.MsgspecError):  # `answer` got past decoding, so this decodes
            envelope = decode_request(request.data)
        tool = envelope.payload.tool if envelope is not None else None
        result = progress.internal_failure(tracked, tool, error_id)
        log.exception("a tool call failed inside the gateway", error_id=error_id, tool=tool, status=result.status)
        if envelope is None:
            return result_reply(None, GATEWAY_APP, result), None
        record = CallRecord(request=envelope.payload, tool=None, result=result, call_id=envelope.header.message_id,
                            executed=tool in tracked.sent, trace=envelope.header.trace,
                            caller=claimed_caller(endpoint, request.subject, envelope.payload))
        return result_reply(envelope, GATEWAY_APP, result), record

    async def _report(self, record: CallRecord | None) -> None:
        try:
            await self._handler.report(record)
        except Exception:
            log.exception("a tool call could not be reported", call_id=record.call_id if record else None)


def _call_span(request: Request, endpoint: Endpoint) -> AbstractContextManager[tracing.SpanHandle]:
    """The call's span. With tracing off nothing of it is worked out: not its attributes, not the
    trace the envelope carries (a second decoding of the request)."""
    if not tracing.tracing_enabled():
        return tracing.handling("tools/call", None)
    return tracing.handling("tools/call", tracing.envelope_trace(request.data), kind=SpanKind.SERVER,
                            attributes={"mcp.method.name": "tools/call",
                                        "aurora.operator": endpoint in (Endpoint.OPERATOR, Endpoint.PERSON),
                                        "aurora.endpoint": endpoint.value, **messaging("process", request.subject)})


def describe_call(span: tracing.SpanHandle, record: CallRecord) -> None:
    """What the gateway decided and what came of it, on the call's span."""
    result = record.result
    span.rename(f"tools/call {record.request.tool}")
    span.update({
        "gen_ai.tool.name": record.request.tool,
        "gen_ai.tool.call.id": record.call_id,
        "aurora.agent": record.request.context.agent,
        "aurora.system": record.system,
        "aurora.tool.side_effect": result.side_effect,
        "aurora.tool.status": result.status,
        "aurora.tool.executed": record.executed,
        "aurora.approval.id": result.approval_id,
        "error.type": result.error.code if result.error else None,
    })
    if result.status != "ok":
        span.error(result.error.code if result.error else result.status)
