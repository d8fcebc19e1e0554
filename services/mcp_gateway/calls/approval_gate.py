"""The approval step: a call that needs a person's grant asks for it (`needs_approval`, with the
approval's id), and the same call presenting the granted approval runs, once.

An approval is bound to the tool, the arguments' hash and a task: a run's task, an edge call's
own task id, and for a person's or the operator's call the task id their client sends and
repeats (`aurora tools call --wait`), kept apart per caller so that nobody presents another's.
Whether a call needs one is admission's (pure) answer; this step reads the policies it needs,
asks, and consumes.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from typing import Protocol

import msgspec

from services.mcp_gateway.approvals import in_chat
from services.mcp_gateway.approvals.deciders import Governance, actor_key
from services.mcp_gateway.approvals.store import ApprovalRefused, ApprovalStore
from services.mcp_gateway.calls import classify
from services.mcp_gateway.calls.admission import Hold, approval_needed, may_need_approval
from services.mcp_gateway.calls.caller import Caller
from services.mcp_gateway.calls.platform_tools import source_app_of, target_of
from shared.clock import now_iso
from shared.contracts.approval import Approval, ChatQuestion
from shared.contracts.toolcall import SideEffect, ToolCallContext, ToolCallRequest, ToolCallResult
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway.calls.approval_gate")
# `event_reply` in the call's event, on the record like any call: (context, text, call id,
# interaction id) → result
ReplyInEvent = Callable[[ToolCallContext, str, str, str | None], Awaitable[ToolCallResult]]
_KEY_SAFE = re.compile(r"^[A-Za-z0-9_=-]{1,128}$")


class Gated(Protocol):
    """What the approval gate needs of a tool: a pool tool or a platform tool."""

    @property
    def name(self) -> str: ...

    @property
    def side_effect(self) -> SideEffect: ...


def approval_task(caller: Caller, ctx: ToolCallContext, call_id: str) -> str | None:
    """The task an approval is bound to. A person's or the operator's task id is their client's
    own word, so it is kept under the caller's name (`person.<name>.<task>`, `operator.<task>`):
    one caller cannot present another's grant, nor an agent's. Written as a KV key may be (the
    runners look an approval's task up when it is decided; names hold no dots)."""
    if not caller.human:
        return ctx.task_id
    own = ctx.task_id or call_id
    if not _KEY_SAFE.match(own):
        own = "h-" + hashlib.sha256(own.encode()).hexdigest()[:32]
    return f"person.{caller.person}.{own}" if caller.kind == "person" else f"operator.{own}"


class ApprovalGate:
    def __init__(self, approvals: ApprovalStore, governance: Governance | None, reply_in_event: ReplyInEvent,
                 on_requested: Callable[[Approval], None] | None = None) -> None:
        self._approvals = approvals
        self._governance = governance  # ApprovalPolicy: grants needed, chat delegation (None: the defaults)
        self._reply_in_event = reply_in_event
        self._on_requested = on_requested

    async def admit(self, caller: Caller, request: ToolCallRequest, tool: Gated, call_id: str, *,
                    gated: bool = True, chat_asked: bool = False,
                    locale: str | None = None) -> str | ToolCallResult | None:
        """None: no approval needed; the consumed approval's id; or the reply that stops the call.
        `locale`: the language a question in the chat is asked in (the agent's)."""
        if not gated or not may_need_approval(caller, tool.side_effect):
            return None
        ctx = request.context
        target = target_of(ctx.delivery) or {}
        requester = caller.requester if caller.human else actor_key(
            source_app_of(ctx.delivery), ctx.actor.id if ctx.actor is not None else target.get("actor_id"))
        # An agent's write always waits: its rules are read only when an approval is asked for.
        rules = None
        if self._governance is not None and (caller.human or ctx.approval_id is None):
            rules = await self._governance.rules(tool.name, tool.side_effect, system=source_app_of(ctx.delivery),
                                                 chat_shorthand=chat_asked)
        hold = approval_needed(caller, tool.side_effect, rules, chat_asked=chat_asked, requester=requester)
        if hold is None:
            return None
        task = approval_task(caller, ctx, call_id)
        if ctx.approval_id is not None:
            return await self._consume(ctx.approval_id, tool, request, task)
        return await self._ask(request, tool, hold, task, requester, locale)

    async def _consume(self, approval_id: str, tool: Gated, request: ToolCallRequest,
                       task: str | None) -> str | ToolCallResult:
        try:
            used = await self._approvals.consume(approval_id, tool.name, request.arguments, task)
        except ApprovalRefused as exc:
            return msgspec.structs.replace(classify.failed("denied", exc.code, str(exc), side_effect=tool.side_effect),
                                           approval_id=approval_id)
        return used.id

    async def _ask(self, request: ToolCallRequest, tool: Gated, hold: Hold, task: str | None,
                   requester: str | None, locale: str | None) -> ToolCallResult:
        context = msgspec.structs.replace(request.context, task_id=task)
        approval, created = await self._approvals.request(tool.name, request.arguments, context, tool.side_effect,
                                                          requested_by=requester,
                                                          required_grants=hold.required_grants,
                                                          policies=hold.policies)
        if created and self._on_requested is not None:
            self._on_requested(approval)
        if created and hold.chat:
            await self._ask_in_chat(approval, request, tool, locale)
        if approval.state in ("pending", "granted"):
            return ToolCallResult(
                status="needs_approval",
                approval_id=approval.id,
                side_effect=tool.side_effect,
                structured={"approval_id": approval.id, "state": approval.state, "expires_at": approval.expires_at},
                content=[{"type": "text",
                          "text": f"{tool.name} is a {tool.side_effect}: approval {approval.id} is {approval.state}"}],
            )
        return msgspec.structs.replace(
            classify.failed("denied", f"approval_{approval.state}",
                            f"the approval for this call ({approval.id}) is {approval.state}",
                            side_effect=tool.side_effect),
            approval_id=approval.id,
        )

    async def _ask_in_chat(self, approval: Approval, request: ToolCallRequest, tool: Gated,
                           locale: str | None) -> None:
        """Ask the user who caused the event to confirm, through the source app's `reply` (as
        `event_reply` would); best effort: the approval stands whether or not the question
        went out, and the CLI or the API can decide it all the same."""
        ctx = request.context
        target = target_of(ctx.delivery) or {}
        actor_id = ctx.actor.id if ctx.actor is not None else target.get("actor_id")
        if not actor_id:  # nobody in particular caused the event: nobody in the chat may decide
            log.info("approval not asked for in the chat: the event names no actor", approval=approval.id)
            return
        # A pool tool's input schema names its arguments for a person (a platform tool has none).
        schema = getattr(tool, "input_schema", None)
        text = in_chat.question_text(approval, locale=locale,
                                            schema=schema if isinstance(schema, dict) else None)
        # Recorded before it is asked: an answer may come back before the send returns.
        await self._approvals.record_question(approval.id, ChatQuestion(
            interaction_id=in_chat.interaction_id_for(approval.id), app=str(target.get("app")),
            session_id=target.get("session_id"), conversation=target.get("conversation"),
            actor_id=str(actor_id), asked_at=now_iso()))
        result = await self._reply_in_event(ctx, text, f"{approval.id}-asked",
                                            in_chat.interaction_id_for(approval.id))
        if result.status != "ok":
            reason = result.error.message if result.error else result.status
            log.info("approval not asked for in the chat", approval=approval.id, reason=reason)
            await self._approvals.record_question(approval.id, None)  # nobody was asked there
