"""`amp.tool.call`: one envelope in, one envelope out, whatever happens in between.

The gateway is the one enforcement point. In order: a call on the tool-call subject acts for
the run it names as the router recorded it (`custody`: agent, target, approver, never the
caller's say); the tool must exist and not be deprecated; an agent's call must be inside
its available set (bound ∩ published ∩ executable); a synthetic run never reaches a
side-effecting tool; an agent's write needs a matching approval, consumed exactly once. Only
then does an executor run the call.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import msgspec

from services.mcp_gateway import chat_approvals, classify, targets
from services.mcp_gateway.arguments import ArgumentCheck
from services.mcp_gateway.calls_in_flight import CallsInFlight
from services.mcp_gateway.catalog import ToolCatalog
from services.mcp_gateway.custody import Custody, CustodyRefusal
from services.mcp_gateway.governance import Governance, actor_key
from services.mcp_gateway.input_required import InputRequestsFailed
from services.mcp_gateway.ledger import CallLedger, Claim
from services.mcp_gateway.platform_tools import (
    PLATFORM_TOOLS,
    PlatformTool,
    app_arguments,
    missing_required,
    source_app_of,
    target_of,
)
from services.mcp_gateway.platform_tools import check as check_platform
from services.mcp_gateway.pool.approvals import ApprovalRefused, ApprovalStore
from services.mcp_gateway.pool.availability import available_tools
from services.mcp_gateway.pool.executable import Executability
from services.mcp_gateway.pool.registry import ToolPool
from services.mcp_gateway.progress import sending
from services.mcp_gateway.session import AppSession, CallInterrupted, CallTimedOut, SessionUnavailable
from shared.appconfig import AppsConfig
from shared.clock import now_iso
from shared.contracts.agent import Agent
from shared.contracts.approval import Approval, ChatQuestion
from shared.contracts.envelope import Header, Source, Trace
from shared.contracts.signals import GATEWAY_APP
from shared.contracts.system import System
from shared.contracts.toolcall import (
    IDEMPOTENCY_META_KEY,
    METHOD_CALL,
    METHOD_RESULT,
    SideEffect,
    ToolCallContext,
    ToolCallEnvelope,
    ToolCallRequest,
    ToolCallResult,
    ToolResultEnvelope,
    decode_request,
)
from shared.contracts.tooldef import HttpExecution, McpExecution, ToolDefinition
from shared.logs import get_logger

log = get_logger("aurora.mcp_gateway.toolcalls")


class Gated(Protocol):
    """What the approval gate needs of a tool: a pool tool or a platform tool."""

    @property
    def name(self) -> str: ...

    @property
    def side_effect(self) -> SideEffect: ...


class HttpRunner(Protocol):
    async def execute(
        self,
        system: System,
        tool: ToolDefinition,
        arguments: dict[str, object],
        *,
        idempotency_key: str | None,
        timeout: float | None = None,
    ) -> ToolCallResult: ...


@dataclass(frozen=True)
class CallRecord:
    """What the gateway reports of each answered call (audit, `tool.*` events, circuits)."""

    request: ToolCallRequest
    tool: ToolDefinition | None
    result: ToolCallResult
    call_id: str
    executed: bool
    system: str | None = None  # where it ran (for platform tools: the source app)
    anonymous: bool = False  # agent-less, but not on the operator subject: nobody vouches for the caller
    person: str | None = None  # an operator call by this person (read off the subject by the server's grant)
    trace: Trace | None = None  # the caller's (the event's) trace, which the `tool.*` event continues


class ToolCallHandler:
    def __init__(
        self,
        pool: ToolPool,
        sessions: dict[tuple[str, str], AppSession],
        executable: Executability,
        *,
        approvals: ApprovalStore,
        apps: AppsConfig,
        catalog: ToolCatalog,
        custody: Custody,
        http: HttpRunner | None = None,
        on_result: Callable[[CallRecord], Awaitable[None]] | None = None,
        on_approval_requested: Callable[[Approval], None] | None = None,
        arguments: ArgumentCheck | None = None,
        ledger: CallLedger | None = None,
        calls: CallsInFlight | None = None,
        governance: Governance | None = None,
    ) -> None:
        self._pool = pool
        self._calls = calls or CallsInFlight()  # MCP calls running now: what an app asks back finds its call
        self._apps = apps
        self._catalog = catalog
        self._sessions = sessions
        self._executable = executable
        self._approvals = approvals
        self._custody = custody
        self._http = http
        self._on_result = on_result
        self._on_approval_requested = on_approval_requested
        self._arguments = arguments or ArgumentCheck()
        self._ledger = ledger
        self._governance = governance  # ApprovalPolicy: grants needed, chat delegation (None: the defaults)

    async def answer(self, data: bytes, *, operator: bool = False, edge: bool = False, person: str | None = None,
                     not_permitted: str | None = None) -> tuple[bytes, CallRecord | None]:
        """The reply to one call, and what to report of it once the reply is on its way (the
        report is not the caller's to wait for). `operator` is true for calls on the operator
        subject: only they may go without an agent (an agent-less call elsewhere could come from
        any runner). `edge` is true for calls on mcp-edge's subject: no run, the agent is the
        bearer token's and the actor the external caller (`_edge_refusal`)."""
        started = time.perf_counter()
        try:
            envelope = decode_request(data)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            malformed = classify.failed("denied", "invalid_request", f"malformed tool call: {exc}")
            return result_reply(None, GATEWAY_APP, malformed), None
        request = envelope.payload
        tool = await self._pool.tool(request.tool)
        side_effect = targets.side_effect_of(tool, request.tool)
        # A write's ledger entry is read while custody reads the run's record: one wait, not two.
        looked_up = (await self._ledger.look_up(envelope.header.message_id)
                     if self._ledger is not None and side_effect not in (None, "read") else None)
        refusal: tuple[str, str] | None = None
        status = "denied"
        if envelope.header.method != METHOD_CALL:
            refusal = "invalid_request", f"header.method must be {METHOD_CALL!r}, not {envelope.header.method!r}"
        elif edge:
            refusal = _edge_refusal(request)
        elif not operator:  # from here on the run's record, not the caller, says who acts for whom
            acting = await self._custody.context_for(request.context)
            if isinstance(acting, CustodyRefusal):
                status, refusal = acting.status, (acting.reason, acting.detail)
            else:
                request = msgspec.structs.replace(request, context=acting)
        if not_permitted is not None:  # a person whose roles do not include operator calls
            refusal = refusal or ("not_permitted", not_permitted)
        refusal = refusal or _misrouted(request, operator)
        if refusal is not None:  # refused before any tool was looked at: audited all the same
            refused = classify.failed(status, *refusal)
            refused_record = CallRecord(request=request, tool=None, result=refused,
                                        call_id=envelope.header.message_id, executed=False,
                                        anonymous=not operator and request.context.agent is None, person=person)
            return result_reply(envelope, GATEWAY_APP, refused), refused_record
        system = tool.system if tool is not None else None
        claim: Claim | None = None
        if self._ledger is not None and looked_up is not None:
            # Asked before? (the caller's answer was lost.) Reads are not recorded: they read again.
            recalled = await self._ledger.recall(envelope.header.message_id, request, looked_up=looked_up)
            if not isinstance(recalled, Claim):  # answered from the ledger: nothing runs, nothing new to audit
                return result_reply(envelope, GATEWAY_APP, recalled), None
            claim = recalled
        if tool is not None:
            result, executed = await self._run(request, tool, envelope.header.message_id, claim)
        elif request.tool in PLATFORM_TOOLS:
            system = source_app_of(request.context.delivery)
            result, executed = await self._run_platform(request, PLATFORM_TOOLS[request.tool], claim)
        else:
            result = classify.failed("denied", "unknown_tool", f"no tool named {request.tool!r}")
            executed = False
        if claim is not None and claim.answered is not None:  # another claim had it first: its answer, as it is
            return result_reply(envelope, GATEWAY_APP, claim.answered), None
        result = msgspec.structs.replace(result, duration_ms=round((time.perf_counter() - started) * 1000, 3))
        if claim is not None:  # before the reply: whoever asks again from now on gets this result
            await claim.finish(result)
        record = CallRecord(request=request, tool=tool, result=result, system=system,
                            call_id=envelope.header.message_id, executed=executed, trace=envelope.header.trace,
                            person=person)
        return result_reply(envelope, system or GATEWAY_APP, result), record

    async def report(self, record: CallRecord | None) -> None:
        """Audit the call and, when it ran, make it a `tool.*` event."""
        if record is not None and self._on_result is not None:
            await self._on_result(record)

    async def _run_platform(self, request: ToolCallRequest, spec: PlatformTool,
                            claim: Claim | None = None) -> tuple[ToolCallResult, bool]:
        """Platform tools are re-checked here at call time: the agent may use this one, the
        event has the target, the source app is still running and still capable."""
        ctx = request.context
        allowed: tuple[str, ...] = tuple(PLATFORM_TOOLS)  # the operator may use any of them
        if ctx.agent is not None:
            agent = await self._pool.agent(ctx.agent)
            if agent is None or not agent.enabled:
                return classify.failed("denied", "unknown_agent", f"no enabled agent {ctx.agent!r}"), False
            allowed = agent.allowed_platform_tools
        app_id = source_app_of(ctx.delivery)
        app = self._apps.get(app_id) if app_id else None
        refusal = check_platform(spec, delivery=ctx.delivery, app=app, allowed_platform_tools=allowed)
        if refusal is not None:
            return classify.failed("denied", refusal.reason, refusal.detail, side_effect=spec.side_effect), False
        assert app is not None
        app_tool = self._catalog.get(f"{app.app_id}.{app.platform[spec.capability]}")
        if app_tool is None:
            return classify.failed(
                "unavailable",
                "app_unavailable",
                f"app {app.name!r} does not offer {app.platform[spec.capability]!r} now",
                side_effect=spec.side_effect,
            ), False
        arguments = app_arguments(spec, request.arguments, ctx.delivery, app_tool.input_schema)
        missing = missing_required(arguments, app_tool.input_schema)
        if missing:
            return classify.failed(
                "denied",
                "adapter_api_unsupported",
                f"{app_tool.name} needs {', '.join(missing)}, which {spec.name} cannot supply",
                side_effect=spec.side_effect,
            ), False
        if ctx.synthetic and spec.side_effect != "read":
            return _suppressed(spec.name, app_tool.name, arguments, spec.side_effect), False
        approval_id: str | None = None
        if spec.needs_approval and ctx.agent is not None:
            gate = await self._approval_gate(request, spec)
            if isinstance(gate, ToolCallResult):
                return gate, False
            approval_id = gate
        session = self._sessions.get(app_tool.app_key)
        # As for the app's own tools: the ledger's claim must not outlive the caller's patience.
        timeout = targets.call_timeout(request.timeout_seconds, app.mcp.call_timeout_seconds)
        if claim is not None:
            taken = await claim.take(side_effect=spec.side_effect, target=app.name, timeout=timeout,
                                     deduplicates=app_tool.tool in app.mcp.idempotency_key_tools)
            if taken is not None:
                return taken, False
        sending(request.tool, spec.side_effect)  # from here a failure may follow a call sent
        key = claim.call_id if claim is not None else None
        result = await self._call_session(session, app_tool.tool, arguments, spec.side_effect, timeout, key,
                                          context=ctx)
        return (msgspec.structs.replace(result, approval_id=approval_id) if approval_id else result), True

    async def _run(self, request: ToolCallRequest, tool: ToolDefinition, call_id: str,
                   claim: Claim | None = None) -> tuple[ToolCallResult, bool]:
        agent = await self._pool.agent(request.context.agent) if request.context.agent else None
        refusal = self._refusal(request, tool, agent) or self._arguments.refusal(tool, request.arguments)
        if refusal is not None:
            return refusal, False
        ctx = request.context
        if ctx.synthetic and tool.side_effect != "read":
            return _suppressed(tool.name, tool.name, request.arguments, tool.side_effect), False
        approval_id: str | None = None
        if ctx.agent is not None and tool.side_effect != "read":
            chat = agent is not None and agent.chat_approval and ctx.delivery is not None  # edge calls have no chat
            gate = await self._approval_gate(request, tool, chat=chat)
            if isinstance(gate, ToolCallResult):
                return gate, False
            approval_id = gate
        if claim is not None:
            target = targets.target_of(tool, request.timeout_seconds, self._sessions, self._pool.systems)
            taken = await claim.take(side_effect=tool.side_effect, target=target.name, timeout=target.timeout,
                                     deduplicates=target.deduplicates)
            if taken is not None:
                return taken, False
        sending(request.tool, tool.side_effect)  # from here a failure may follow a call sent
        result = await self._execute(request, tool, call_id)
        return msgspec.structs.replace(result, approval_id=approval_id), True

    def _refusal(self, request: ToolCallRequest, tool: ToolDefinition, agent: Agent | None) -> ToolCallResult | None:
        if tool.state == "DEPRECATED":
            return classify.failed("denied", "deprecated", f"{tool.name} is deprecated", side_effect=tool.side_effect)
        agent_id = request.context.agent
        if agent_id is None:  # the operator may call any tool that can run, drafts included (to try them)
            blocked = self._executable(tool)
            if blocked is None:
                return None
            status = "denied" if blocked[0] == "system_disabled" else "unavailable"
            return classify.failed(status, blocked[0], blocked[1], side_effect=tool.side_effect)
        if agent is None:
            return classify.failed("denied", "unknown_agent", f"no agent {agent_id!r}")
        if not agent.enabled:
            return classify.failed("denied", "agent_disabled", f"agent {agent_id!r} is disabled")
        if tool.name not in agent.tools:
            return classify.failed(
                "denied", "not_bound", f"{tool.name} is not bound to agent {agent_id!r}", side_effect=tool.side_effect
            )
        exclusion = available_tools(agent.tools, self._pool.tools, self._executable).reason_for(tool.name)
        if exclusion is not None:
            # Left out because it cannot run right now (its app restarting, its circuit open):
            # nothing was sent, so the caller may wait and ask again. Anything else is a refusal.
            blocked = self._executable(tool)
            transient = blocked is not None and blocked[0] == exclusion.reason and blocked[0] != "system_disabled"
            return classify.failed("unavailable" if transient else "denied", exclusion.reason, exclusion.detail,
                                   side_effect=tool.side_effect)
        return None

    async def _approval_gate(self, request: ToolCallRequest, tool: Gated, *,
                             chat: bool = False) -> str | ToolCallResult:
        """The consumed approval's id, or the reply that stops the call. With `chat`, a new
        approval is also asked for in the conversation the event came from."""
        ctx = request.context
        if ctx.approval_id is not None:
            try:
                used = await self._approvals.consume(ctx.approval_id, tool.name, request.arguments, ctx.task_id)
            except ApprovalRefused as exc:
                return msgspec.structs.replace(
                    classify.failed("denied", exc.code, str(exc), side_effect=tool.side_effect),
                    approval_id=ctx.approval_id,
                )
            return used.id
        target = target_of(ctx.delivery) or {}
        requested_by = actor_key(source_app_of(ctx.delivery),
                                 ctx.actor.id if ctx.actor is not None else target.get("actor_id"))
        if self._governance is not None:
            rules = await self._governance.rules(tool.name, tool.side_effect, system=source_app_of(ctx.delivery),
                                                 chat_shorthand=chat)
            chat = rules.chat_delegated(requested_by)
            required, policies = rules.required_grants(tool.side_effect), rules.ids
        else:
            required, policies = 1, ()
        approval, created = await self._approvals.request(tool.name, request.arguments, ctx, tool.side_effect,
                                                          requested_by=requested_by, required_grants=required,
                                                          policies=policies)
        if created and self._on_approval_requested is not None:
            self._on_approval_requested(approval)
        if created and chat:
            await self._ask_in_chat(approval, request)
        if approval.state in ("pending", "granted"):
            return ToolCallResult(
                status="needs_approval",
                approval_id=approval.id,
                side_effect=tool.side_effect,
                structured={"approval_id": approval.id, "state": approval.state, "expires_at": approval.expires_at},
                content=[
                    {
                        "type": "text",
                        "text": f"{tool.name} is a {tool.side_effect}: approval {approval.id} is {approval.state}",
                    }
                ],
            )
        return msgspec.structs.replace(
            classify.failed(
                "denied",
                f"approval_{approval.state}",
                f"the approval for this call ({approval.id}) is {approval.state}",
                side_effect=tool.side_effect,
            ),
            approval_id=approval.id,
        )

    async def _ask_in_chat(self, approval: Approval, request: ToolCallRequest) -> None:
        """Ask the user who caused the event to confirm, through the source app's `reply` (as
        `event_reply` would); best effort: the approval stands whether or not the question
        went out, and the CLI or the API can decide it all the same."""
        ctx = request.context
        target = target_of(ctx.delivery) or {}
        actor_id = ctx.actor.id if ctx.actor is not None else target.get("actor_id")
        if not actor_id:  # nobody in particular caused the event: nobody in the chat may decide
            log.info("approval not asked for in the chat: the event names no actor", approval=approval.id)
            return
        asking = ToolCallRequest(tool="event_reply", arguments={"text": chat_approvals.question_text(approval)},
                                 context=msgspec.structs.replace(ctx, approval_id=None))
        result, executed = await self._run_platform(asking, PLATFORM_TOOLS["event_reply"])
        if self._on_result is not None:  # the question is a message sent: on the record like any call
            await self._on_result(CallRecord(request=asking, tool=None, result=result, executed=executed,
                                             call_id=f"{approval.id}-asked", system=source_app_of(ctx.delivery)))
        if result.status != "ok":
            reason = result.error.message if result.error else result.status
            log.info("approval not asked for in the chat", approval=approval.id, reason=reason)
            return
        await self._approvals.record_question(approval.id, ChatQuestion(
            interaction_id=chat_approvals.interaction_id_for(approval.id), app=str(target.get("app")),
            session_id=target.get("session_id"), conversation=target.get("conversation"),
            actor_id=str(actor_id), asked_at=now_iso()))

    async def _execute(self, request: ToolCallRequest, tool: ToolDefinition, call_id: str) -> ToolCallResult:
        execution = tool.execution
        if isinstance(execution, McpExecution):
            return await self._execute_mcp(request, tool, execution, call_id)
        assert isinstance(execution, HttpExecution)
        system = self._pool.systems.get(tool.system)
        if self._http is None or system is None:
            return classify.failed(
                "unavailable", "no_executor", f"no HTTP executor for {tool.name}", side_effect=tool.side_effect
            )
        # The call id is the idempotency key: asked again under the same id, it is the same call.
        return await self._http.execute(
            system, tool, dict(request.arguments), idempotency_key=call_id, timeout=request.timeout_seconds
        )

    async def _execute_mcp(
        self, request: ToolCallRequest, tool: ToolDefinition, execution: McpExecution, call_id: str
    ) -> ToolCallResult:
        session = self._sessions.get((execution.app, execution.instance))
        limit = session.app.mcp.call_timeout_seconds if session is not None else targets.DEFAULT_TIMEOUT
        timeout = targets.call_timeout(request.timeout_seconds, limit)
        return await self._call_session(session, execution.tool, request.arguments, tool.side_effect, timeout,
                                        call_id, context=request.context)

    async def _call_session(
        self, session: AppSession | None, tool: str, arguments: dict[str, Any], side_effect: SideEffect,
        timeout: float, key: str | None = None, *, context: ToolCallContext | None = None,
    ) -> ToolCallResult:
        """`key`: the idempotency key a write carries in `_meta` (apps that accept one deduplicate on it).
        `context`: whom the call is for, which elicitation and sampling requests during it need;
        the app's progress notes (by the call's `progressToken`) come back in the result."""
        if session is None:
            return classify.failed("unavailable", "no_session", "the app has no session", side_effect=side_effect)
        with self._calls.running(session.key, tool, context or ToolCallContext(), call_id=key,
                                 timeout=timeout) as running:
            meta: dict[str, Any] = {"progressToken": running.token}
            if key is not None and side_effect != "read":
                meta[IDEMPOTENCY_META_KEY] = key
            result = await self._call_running(session, tool, arguments, side_effect, timeout, meta)
        return msgspec.structs.replace(result, progress=list(running.progress)) if running.progress else result

    async def reply_in_event(self, context: ToolCallContext, text: str, *, call_id: str) -> ToolCallResult:
        """`event_reply` for the call's event (an app asking its user, see `elicitation`); on the
        record like any call."""
        asking = ToolCallRequest(tool="event_reply", arguments={"text": text},
                                 context=msgspec.structs.replace(context, approval_id=None))
        result, executed = await self._run_platform(asking, PLATFORM_TOOLS["event_reply"])
        if self._on_result is not None:
            await self._on_result(CallRecord(request=asking, tool=None, result=result, executed=executed,
                                             call_id=call_id, system=source_app_of(context.delivery)))
        return result

    async def _call_running(self, session: AppSession, tool: str, arguments: dict[str, Any],
                            side_effect: SideEffect, timeout: float, meta: dict[str, Any]) -> ToolCallResult:
        started = time.perf_counter()
        try:
            result = await session.call_tool(tool, arguments, timeout, meta)
        except CallTimedOut:
            return classify.timed_out(_ms(started), side_effect, timeout)
        except CallInterrupted as exc:
            return classify.interrupted(_ms(started), side_effect, str(exc))
        except SessionUnavailable as exc:
            return classify.failed("unavailable", "app_unavailable", str(exc), _ms(started), side_effect)
        except InputRequestsFailed as exc:  # a stateless app's question went unanswered: the call stopped
            return classify.failed("tool_error", "input_not_given", str(exc), _ms(started), side_effect)
        except RuntimeError as exc:  # the SDK's output-schema check: the app broke its own contract
            return classify.failed("tool_error", "invalid_output", str(exc), _ms(started), side_effect)
        except Exception as exc:
            return classify.failed(
                "tool_error", "protocol_error", f"{type(exc).__name__}: {exc}", _ms(started), side_effect
            )
        return classify.from_mcp_result(result, _ms(started), side_effect)


def _suppressed(name: str, would_call: str, arguments: dict[str, Any], side_effect: SideEffect) -> ToolCallResult:
    """A synthetic run never reaches a side effect; the result says what would have been done."""
    return ToolCallResult(
        status="suppressed",
        side_effect=side_effect,
        content=[{"type": "text", "text": f"synthetic run: {name} was not called"}],
        structured={"would_call": would_call, "arguments": arguments},
    )


def _misrouted(request: ToolCallRequest, operator: bool) -> tuple[str, str] | None:
    if operator and request.context.agent is not None:
        return "invalid_request", "an operator call names no agent; agents' calls go to the tool-call subject"
    # The event's own delivery tools are the exception: a pipeline without an agent still
    # answers through `event_reply`, whose target is frozen from the event. A `platform_*` tool
    # names its own target: without an agent that is the operator's call alone.
    delivery_tool = request.tool in PLATFORM_TOOLS and PLATFORM_TOOLS[request.tool].frozen_target
    if not operator and request.context.agent is None and not delivery_tool:
        return "operator_only", ("a call without an agent is an operator call: send it to the operator subject "
                                 "(<prefix>.admin.tools.call), which only operator credentials may use")
    return None


def _edge_refusal(request: ToolCallRequest) -> tuple[str, str] | None:
    """What an mcp-edge call must say: the agent whose endpoint was called, the caller (kind
    `api`: the bearer token), its own task id (an approval pairs with it), and no run."""
    ctx = request.context
    if ctx.agent is None or ctx.actor is None or ctx.actor.kind != "api" or not ctx.task_id:
        return "invalid_request", "an edge call names its agent, its caller (actor kind 'api') and a task id"
    if ctx.run_id is not None or ctx.delivery is not None:
        return "invalid_request", "an edge call is no run: it names no run id and no delivery"
    return None


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


# A reply's message id: a random version-4 UUID, drawn from a generator of the gateway's own
# (seeded from the system's randomness, and again in a forked child). Not `uuid.uuid4()`: a
# reply's id is neither a secret nor a deduplication key, and reading the system's randomness
# and building a `UUID` took 10 µs of every call's path (measured in place).
_reply_ids = random.Random()
os.register_at_fork(after_in_child=_reply_ids.seed)
_UUID4_KEEP = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)  # all but the version and variant bits
_UUID4_MARK = (0x4000 << 64) | (0x8000 << 48)  # version 4, variant RFC 4122


def reply_id() -> str:
    digits = f"{_reply_ids.getrandbits(128) & _UUID4_KEEP | _UUID4_MARK:032x}"
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def result_reply(request: ToolCallEnvelope | None, app_id: str, result: ToolCallResult) -> bytes:
    """The reply envelope to `request` (None: it could not be decoded), from `app_id`."""
    header = Header(
        method=METHOD_RESULT,
        message_id=reply_id(),
        timestamp=now_iso(),
        source=Source(app=app_id),
        trace=request.header.trace if request is not None else None,
    )
    return msgspec.json.encode(ToolResultEnvelope(header=header, payload=result))
