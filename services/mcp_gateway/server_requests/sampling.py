"""`sampling/createMessage` from an app during a tool call, answered by the calling agent's model.

The gateway never calls a model (it holds no model settings, no model keys, and a model call is
not a tool call), so it asks the runners on `<p>.model.sample` (`shared.contracts.sampling`):
they hold each agent's model settings and the keys, and already call that model for the agent's
own turns. The call in flight names the agent (`calls_in_flight`, `custody`); a call without an
agent (an operator's) or an agent without a model is refused with the reason; only text
messages are relayed. A call from an agent's MCP endpoint is relayed to that MCP client instead
(`edge_relay`), as the request is the client's to answer there. Each request is audited as
`sampling/createMessage` of the app.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Final

import mcp_types as types
import msgspec
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from services.mcp_gateway.calls.in_flight import CallInFlight, CallsInFlight, SessionKey
from services.mcp_gateway.calls.record import CallRecord
from services.mcp_gateway.server_requests.edge_relay import EdgeRelay, is_edge_call
from shared.contracts import sampling as contract
from shared.contracts.subjects import Subjects
from shared.contracts.toolcall import ToolCallContext, ToolCallRequest, ToolCallResult, ToolError
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway.sampling")
METHOD: Final = "sampling/createMessage"
CALL_MARGIN = 1.0  # the answer must reach the app before the call itself times out


class Refused(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class Sampling:
    def __init__(self, nc: NATS, subjects: Subjects, calls: CallsInFlight,
                 audit: Callable[[CallRecord], Awaitable[None]], *, timeout: float = 120.0,
                 edge: EdgeRelay | None = None) -> None:
        self._nc = nc
        self._edge = edge
        self._subject = subjects.model_sample
        self._calls = calls
        self._audit = audit
        self._timeout = timeout

    async def sample(self, key: SessionKey, app_name: str, params: types.CreateMessageRequestParams, *,
                     call_token: str | None = None) -> types.CreateMessageResult | types.ErrorData:
        started = time.perf_counter()
        call = self._calls.caller(key, params.meta, token=call_token)
        context = call.context if isinstance(call, CallInFlight) else ToolCallContext()
        if self._edge is not None and isinstance(call, CallInFlight) and is_edge_call(context):
            return await self._relay(self._edge, key, call, app_name, params, started)
        try:
            reply = await self._ask(call, key[0], params)
        except Refused as exc:
            await self._record(key, call, params, started, error=ToolError(code=exc.code, message=str(exc)))
            log.info("sampling refused", app=app_name, code=exc.code, reason=str(exc))
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"{exc.code}: {exc}")
        await self._record(key, call, params, started, reply=reply)
        text = types.TextContent(type="text", text=reply.text or "")
        return types.CreateMessageResult(role="assistant", content=text, model=reply.model or "unknown",
                                         stop_reason=reply.stop_reason)

    async def _relay(self, edge: EdgeRelay, key: SessionKey, call: CallInFlight, app_name: str,
                     params: types.CreateMessageRequestParams,
                     started: float) -> types.CreateMessageResult | types.ErrorData:
        """The edge caller's own client samples (or the edge says why it cannot)."""
        wait = min(self._timeout, call.remaining() - CALL_MARGIN)
        result: types.CreateMessageResult | None = None
        error: ToolError | None
        if wait <= 0:
            error = ToolError(code="no_time", message="the call has no time left to wait for the client")
        else:
            asked = params.model_dump(by_alias=True, mode="json", exclude_none=True)
            answer = await edge.ask(call.context, METHOD, asked, app=app_name, wait=wait)
            error = ToolError(code=answer.error.code, message=answer.error.message) if answer.error else None
            if error is None:
                try:
                    result = types.CreateMessageResult.model_validate(answer.result or {})
                except ValueError as exc:
                    error = ToolError(code="bad_client_answer",
                                      message=f"the client's answer is no sampling result: {exc}")
        if result is None or error is not None:
            error = error or ToolError(code="bad_client_answer", message="the client gave no result")
            await self._record(key, call, params, started, error=error)
            log.info("sampling refused", app=app_name, code=error.code, reason=error.message)
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"{error.code}: {error.message}")
        text = result.content.text if isinstance(result.content, types.TextContent) else None
        await self._record(key, call, params, started, reply=contract.SampleReply(
            text=text, model=result.model, stop_reason=result.stop_reason))
        return result

    async def _ask(self, call: CallInFlight | str, app_id: str,
                   params: types.CreateMessageRequestParams) -> contract.SampleReply:
        if isinstance(call, str):
            raise Refused("no_agent", f"no agent's model to ask: {call}")
        ctx = call.context
        if ctx.agent is None:
            raise Refused("no_agent", "no agent's model to ask: the call is an operator's, not an agent's")
        if params.tools:
            raise Refused("unsupported", "sampling with tools is not supported")
        messages = []
        for message in params.messages:
            content = message.content
            if not isinstance(content, types.TextContent):
                raise Refused("unsupported", f"only text messages can be sampled, not {type(content).__name__}")
            messages.append(contract.SampleMessage(role=message.role, text=content.text))
        wait = min(self._timeout, call.remaining() - CALL_MARGIN)
        if wait <= 0:
            raise Refused("no_time", "the call has no time left to wait for the model")
        request = contract.SampleRequest(
            agent=ctx.agent, run_id=ctx.run_id, task_id=ctx.task_id, app=app_id, messages=messages,
            system_prompt=params.system_prompt, max_tokens=params.max_tokens, temperature=params.temperature,
            stop_sequences=list(params.stop_sequences or []))
        try:
            answer = await self._nc.request(self._subject, contract.encode(request), timeout=wait)
            reply = contract.decode_reply(answer.data)
        except NoRespondersError as exc:
            raise Refused("no_runner", "no runner answers sampling requests now") from exc
        except NatsTimeoutError as exc:
            raise Refused("model_timeout", f"the model did not answer within {wait:g}s") from exc
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise Refused("bad_reply", f"the runner's answer is unreadable: {exc}") from exc
        if reply.error is not None:
            raise Refused(reply.error.code, reply.error.message)
        return reply

    async def _record(self, key: SessionKey, call: CallInFlight | str, params: types.CreateMessageRequestParams,
                      started: float, *, reply: contract.SampleReply | None = None,
                      error: ToolError | None = None) -> None:
        """On the audit as the call's caller (`call`: the call in flight, or why none is named)."""
        context = call.context if isinstance(call, CallInFlight) else ToolCallContext()
        asked = {"messages": len(params.messages), "max_tokens": params.max_tokens,
                 "system_prompt": params.system_prompt}
        structured = {"model": reply.model, "stop_reason": reply.stop_reason, "text": reply.text} if reply else None
        await self._audit(CallRecord(
            request=ToolCallRequest(tool=METHOD, arguments=asked, context=context), tool=None,
            call_id=f"sample-{uuid.uuid4().hex[:20]}", executed=False, system=key[0],
            caller=call.caller if isinstance(call, CallInFlight) else None,
            result=ToolCallResult(status="ok" if error is None else "denied", structured=structured, error=error,
                                  duration_ms=round((time.perf_counter() - started) * 1000, 3))))
