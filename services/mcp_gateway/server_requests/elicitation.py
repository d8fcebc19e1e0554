"""`elicitation/create` from an app during a tool call, answered by the user of the call's event.

Gateways commonly drop this request; Aurora asks the person it is for. The call in flight names
the run (`calls_in_flight`), the run's record names the user and the conversation (`custody`),
so the question goes to that conversation through the source chat app's `reply` capability (as
`event_reply`, under the interaction id `eli.<id>`), an `interaction.requested` event says so,
and the answer — an `interaction.submitted` from the same app, conversation and user, checked
against the requested schema (`elicit_form`) — is the elicitation's result. An answer that does
not fit is told what to fix and the question keeps waiting; no fitting answer within the
timeout (at most `AURORA_ELICITATION_TIMEOUT_SECONDS`, never beyond the call's own timeout) is
`cancel`. A call from an agent's MCP endpoint is relayed to that MCP client instead
(`edge_relay`: the mcp-edge instance holding the call asks it, when it declared the capability).
A call with no user behind it (an operator call, an event without an actor or a conversation)
or a synthetic run is declined with the reason in `_meta["aurora/reason"]`. Each elicitation is
audited as `elicitation/create` of the app.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol

import mcp_types as types

from services.mcp_gateway.approvals import in_chat
from services.mcp_gateway.calls.in_flight import CallInFlight, CallsInFlight, SessionKey
from services.mcp_gateway.calls.platform_tools import source_app_of, target_of
from services.mcp_gateway.calls.record import CallRecord
from services.mcp_gateway.server_requests import elicit_form
from services.mcp_gateway.server_requests.edge_relay import EdgeRelay, is_edge_call
from services.mcp_gateway.server_requests.elicit_answers import PREFIX, ElicitAnswers
from shared.clock import now_iso
from shared.contracts.approval import ChatQuestion
from shared.contracts.envelope import EventEnvelope
from shared.contracts.toolcall import ToolCallContext, ToolCallRequest, ToolCallResult, ToolError
from shared.i18n import say
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway.elicitation")
METHOD: Final = "elicitation/create"
REASON_META_KEY = "aurora/reason"
NO_USER = "no user to ask"
CALL_MARGIN = 1.0  # the answer must reach the app before the call itself times out


class EventReplies(Protocol):
    async def reply_in_event(self, context: ToolCallContext, text: str, *, call_id: str,
                             interaction_id: str | None = None) -> ToolCallResult: ...

    async def locale_of(self, context: ToolCallContext) -> str | None: ...


Announce = Callable[[str, str, dict[str, Any], str | None], None]  # (interaction id, summary, data, session)


class Elicitation:
    def __init__(self, calls: CallsInFlight, replies: EventReplies, answers: ElicitAnswers,
                 audit: Callable[[CallRecord], Awaitable[None]], announce: Announce, *, timeout: float,
                 edge: EdgeRelay | None = None) -> None:
        self._calls = calls
        self._edge = edge
        self._replies = replies
        self._answers = answers
        self._audit = audit
        self._announce = announce
        self._timeout = timeout

    async def elicit(self, key: SessionKey, app_name: str, params: types.ElicitRequestParams, *,
                     call_token: str | None = None) -> types.ElicitResult:
        started = time.perf_counter()
        interaction_id = f"{PREFIX}{uuid.uuid4().hex[:20]}"
        call = self._calls.caller(key, params.meta, token=call_token)
        context = call.context if isinstance(call, CallInFlight) else ToolCallContext()
        asked: dict[str, Any] = {"message": params.message, "mode": params.mode}
        if isinstance(params, types.ElicitRequestFormParams):
            asked["requested_schema"] = params.requested_schema
        outcome = await self._outcome(call, app_name, params, interaction_id)
        result, code, reason = outcome
        structured: dict[str, Any] = {"action": result.action, "interaction_id": interaction_id}
        if result.content is not None:
            structured["content"] = result.content
        if reason:
            structured["reason"] = reason
        await self._audit(CallRecord(
            request=ToolCallRequest(tool=METHOD, arguments=asked, context=context),
            tool=None, call_id=interaction_id, executed=False, system=key[0],
            caller=call.caller if isinstance(call, CallInFlight) else None,
            result=ToolCallResult(status="ok" if code is None else "denied", structured=structured,
                                  error=ToolError(code=code, message=reason) if code and reason else None,
                                  duration_ms=round((time.perf_counter() - started) * 1000, 3)),
        ))
        log.info("elicitation answered", app=app_name, action=result.action, reason=reason,
                 task=context.task_id, interaction=interaction_id)
        return result

    async def _outcome(self, call: CallInFlight | str, app_name: str, params: types.ElicitRequestParams,
                       interaction_id: str) -> tuple[types.ElicitResult, str | None, str | None]:
        """(the result, the code of why Aurora declined itself or None, the reason)."""
        if isinstance(call, str):
            return _declined(f"{NO_USER}: {call}"), "no_user_to_ask", f"{NO_USER}: {call}"
        if self._edge is not None and is_edge_call(call.context):
            return await self._relay(self._edge, call, app_name, params)
        problem = _nobody(call.context)
        if problem is not None:
            return _declined(problem), "no_user_to_ask", problem
        if call.context.synthetic:
            why = "a synthetic run asks nobody"
            return _declined(why), "synthetic", why
        if not isinstance(params, types.ElicitRequestFormParams):
            why = "only form-mode elicitation is supported (a URL cannot be opened through a chat answer)"
            return _declined(why), "unsupported_mode", why
        try:
            fields = elicit_form.fields_of(params.requested_schema)
        except elicit_form.UnsupportedSchema as exc:
            return _declined(str(exc)), "unsupported_schema", str(exc)
        wait = min(self._timeout, call.remaining() - CALL_MARGIN)
        if wait <= 0:
            why = "the call has no time left to wait for an answer"
            return types.ElicitResult(action="cancel", _meta={REASON_META_KEY: why}), "no_time", why
        return await self._ask(call, app_name, params.message, fields, interaction_id, wait)

    async def _relay(self, edge: EdgeRelay, call: CallInFlight, app_name: str,
                     params: types.ElicitRequestParams) -> tuple[types.ElicitResult, str | None, str | None]:
        """The edge caller's own client answers (or the edge says why it cannot)."""
        wait = min(self._timeout, call.remaining() - CALL_MARGIN)
        if wait <= 0:
            why = "the call has no time left to wait for an answer"
            return types.ElicitResult(action="cancel", _meta={REASON_META_KEY: why}), "no_time", why
        asked = params.model_dump(by_alias=True, mode="json", exclude_none=True)
        answer = await edge.ask(call.context, METHOD, asked, app=app_name, wait=wait)
        if answer.error is not None:
            why = f"the MCP client was not asked or did not answer: {answer.error.message}"
            if answer.error.code == "client_timeout":
                return types.ElicitResult(action="cancel", _meta={REASON_META_KEY: why}), None, why
            return _declined(why), answer.error.code, why
        try:
            return types.ElicitResult.model_validate(answer.result or {}), None, None
        except ValueError as exc:
            why = f"the MCP client's answer is no elicitation result: {exc}"
            return _declined(why), "bad_client_answer", why

    async def _ask(self, call: CallInFlight, app_name: str, message: str, fields: list[elicit_form.Field],
                   interaction_id: str, wait: float) -> tuple[types.ElicitResult, str | None, str | None]:
        ctx = call.context
        target = target_of(ctx.delivery) or {}
        app = str(target.get("app") or source_app_of(ctx.delivery))
        question = ChatQuestion(interaction_id=interaction_id, app=app,
                                session_id=target.get("session_id"), conversation=target.get("conversation"),
                                actor_id=ctx.actor.id if ctx.actor else None, asked_at=now_iso())
        locale = await self._replies.locale_of(ctx)
        text = elicit_form.question_text(message, fields, asker=app_name, locale=locale)
        deadline = time.monotonic() + wait
        with self._answers.waiting(interaction_id) as answers:  # listening before the question goes out
            sent = await self._replies.reply_in_event(ctx, text, call_id=f"{interaction_id}-asked",
                                                      interaction_id=interaction_id)
            if sent.status != "ok":
                why = f"the question could not be sent: {sent.error.message if sent.error else sent.status}"
                return _declined(why), "not_asked", why
            self._announce(interaction_id, message[:500], {
                "interaction_id": interaction_id, "task_id": ctx.task_id, "run_id": ctx.run_id, "agent": ctx.agent,
                "app": app_name, "tool": call.tool, "question": text,
                "fields": [{"name": f.name, "kind": f.kind, "required": f.required} for f in fields],
            }, ctx.session_id)
            while (left := deadline - time.monotonic()) > 0:
                try:
                    event = await asyncio.wait_for(answers.get(), timeout=left)
                except TimeoutError:
                    break
                verdict = await self._judge(event, question, fields, ctx, interaction_id, locale)
                if verdict is not None:
                    return verdict, None, None
        why = f"no answer within {wait:g}s"
        return types.ElicitResult(action="cancel", _meta={REASON_META_KEY: why}), None, why

    async def _judge(self, event: EventEnvelope, question: ChatQuestion, fields: list[elicit_form.Field],
                     ctx: ToolCallContext, interaction_id: str, locale: str | None) -> types.ElicitResult | None:
        """The result this answer gives; None when it gives none (someone else's, or unfit: told so)."""
        problem = in_chat.answer_problem(question, event)
        if problem is not None:
            log.info("an answer to an elicitation was not taken", interaction=interaction_id, reason=problem)
            return None
        data = event.payload.data if isinstance(event.payload.data, dict) else {}
        parsed = elicit_form.parse_answer(str(data.get("value", "")), fields, locale=locale)
        if isinstance(parsed, elicit_form.Answer):
            return types.ElicitResult(action=parsed.action, content=parsed.content)
        fix = "\n".join(f"- {p}" for p in parsed)
        await self._replies.reply_in_event(
            ctx, "\n".join([say(locale, "That answer does not fit:"), fix, say(locale, "(answer again)")]),
            call_id=f"{interaction_id}-fix-{uuid.uuid4().hex[:8]}", interaction_id=interaction_id)
        return None


def _nobody(ctx: ToolCallContext) -> str | None:
    """Why nobody can be asked for this call (None: its event's user can)."""
    if ctx.run_id is None:
        return f"{NO_USER}: the call is no event's run (an operator's, or an MCP client's at an agent's endpoint)"
    if ctx.actor is None or ctx.actor.kind != "user":
        return f"{NO_USER}: the call's event names no user"
    target = target_of(ctx.delivery) or {}
    if not (target.get("session_id") or target.get("conversation")):
        return f"{NO_USER}: the call's event names no conversation to ask in"
    return None


def _declined(reason: str) -> types.ElicitResult:
    return types.ElicitResult(action="decline", _meta={REASON_META_KEY: reason})
