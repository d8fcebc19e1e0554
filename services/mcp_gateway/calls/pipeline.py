"""`amp.tool.call` and its siblings: one envelope in, one envelope out, and one ordered pipeline
every call passes, whoever the caller is:

1. custody: the caller, from the endpoint and (for a run) the router's record (`caller`);
2. binding and availability: the tool exists, is not deprecated, an agent's is bound to it and
   available (`admission.binding_refusal`);
3. argument schema (`ArgumentCheck`); a synthetic run never reaches a side effect;
4. policy and 5. approval: the ApprovalPolicy documents and the tool's side effect say whether a
   person must grant it first, for agents, people, the operator and edge tokens alike
   (`admission.approval_needed`, `approval_gate`);
6. ledger: a write is claimed before it is sent (a call asked again under the same id is
   answered from the ledger right after custody: it passed every step when it first ran);
7. execution (`mcp`, `http`, `a2a`, `platform`);
8. audit: every answer, refusals included, is reported with its caller (`report`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import msgspec

from services.mcp_gateway.approvals.deciders import Governance
from services.mcp_gateway.approvals.store import ApprovalStore
from services.mcp_gateway.calls import classify, targets
from services.mcp_gateway.calls.a2a import A2AExecutor
from services.mcp_gateway.calls.admission import ToolState, binding_refusal
from services.mcp_gateway.calls.approval_gate import ApprovalGate
from services.mcp_gateway.calls.arguments import ArgumentCheck
from services.mcp_gateway.calls.caller import PLATFORM, Authorize, Caller, Endpoint, Refused, caller_of
from services.mcp_gateway.calls.custody import Custody
from services.mcp_gateway.calls.http import HttpExecutor
from services.mcp_gateway.calls.in_flight import CallsInFlight
from services.mcp_gateway.calls.ledger import CallLedger, Claim
from services.mcp_gateway.calls.mcp import McpExecutor
from services.mcp_gateway.calls.platform import PlatformCalls
from services.mcp_gateway.calls.platform_tools import PLATFORM_TOOLS, PlatformTool, source_app_of
from services.mcp_gateway.calls.progress import sending
from services.mcp_gateway.calls.record import CallRecord
from services.mcp_gateway.calls.replies import result_reply
from services.mcp_gateway.pool.availability import available_tools
from services.mcp_gateway.pool.executable import Executability
from services.mcp_gateway.pool.live_catalog import ToolCatalog
from services.mcp_gateway.pool.registry import ToolPool
from services.mcp_gateway.sessions.session import AppSession
from services.mcp_gateway.systems.runtime import HttpSystems
from shared.config.appconfig import AppsConfig
from shared.contracts.agent import Agent
from shared.contracts.approval import Approval
from shared.contracts.signals import GATEWAY_APP
from shared.contracts.toolcall import (
    METHOD_CALL,
    SideEffect,
    ToolCallContext,
    ToolCallRequest,
    ToolCallResult,
    decode_request,
)
from shared.contracts.tooldef import A2AExecution, McpExecution, ToolDefinition

Answer = tuple[bytes, CallRecord | None]


class CallPipeline:
    def __init__(
        self, pool: ToolPool, sessions: dict[tuple[str, str], AppSession], executable: Executability, *,
        approvals: ApprovalStore, apps: AppsConfig, catalog: ToolCatalog, custody: Custody,
        http: HttpSystems | None = None, on_result: Callable[[CallRecord], Awaitable[None]] | None = None,
        on_approval_requested: Callable[[Approval], None] | None = None, arguments: ArgumentCheck | None = None,
        ledger: CallLedger | None = None, calls: CallsInFlight | None = None, governance: Governance | None = None,
        authorize: Authorize | None = None, a2a: A2AExecutor | None = None,
    ) -> None:
        self._pool = pool
        self._executable = executable
        self._custody = custody
        self._authorize = authorize  # a person's call: their roles, from the users registry
        self._on_result = on_result
        self._arguments = arguments or ArgumentCheck()
        self._ledger = ledger
        self._mcp = McpExecutor(sessions, calls)
        self._http = HttpExecutor(lambda: pool.systems, http)
        # Without one given, remote agents' questions are declined (nobody to relay them to).
        self._a2a = a2a or A2AExecutor(lambda: pool.systems, calls or CallsInFlight(), None, None)
        self._platform = PlatformCalls(pool, apps, catalog, self._mcp)
        self._gate = ApprovalGate(approvals, governance, self._ask_in_event, on_approval_requested)

    async def answer(self, data: bytes, endpoint: Endpoint = Endpoint.TOOL_CALL, subject: str = "") -> Answer:
        """The reply to one call, and what to report of it once the reply is on its way (the
        report is not the caller's to wait for). `subject`: what the call came in on (a person's
        call names them there)."""
        started = time.perf_counter()
        try:
            envelope = decode_request(data)
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            malformed = classify.failed("denied", "invalid_request", f"malformed tool call: {exc}")
            return result_reply(None, GATEWAY_APP, malformed), None
        request, call_id = envelope.payload, envelope.header.message_id
        tool = await self._pool.tool(request.tool)
        side_effect = targets.side_effect_of(tool, request.tool)
        # A write's ledger entry is read before custody reads the run's record (the same wait).
        looked_up = (await self._ledger.look_up(call_id)
                     if self._ledger is not None and side_effect not in (None, "read") else None)
        if envelope.header.method != METHOD_CALL:
            settled: tuple[Caller, ToolCallRequest] | Refused = Refused(
                "denied", "invalid_request", f"header.method must be {METHOD_CALL!r}, not {envelope.header.method!r}",
                Caller("unverified", agent=request.context.agent))
        else:
            settled = await caller_of(endpoint, subject, request, self._custody, self._authorize)
        if isinstance(settled, Refused):  # refused before any tool was looked at: audited all the same
            refused = classify.failed(settled.status, settled.reason, settled.detail)
            return result_reply(envelope, GATEWAY_APP, refused), CallRecord(
                request=request, tool=None, result=refused, call_id=call_id, executed=False, caller=settled.caller)
        caller, request = settled
        claim: Claim | None = None
        if self._ledger is not None and looked_up is not None:
            # Asked before? (the caller's answer was lost.) Reads are not recorded: they read again.
            recalled = await self._ledger.recall(call_id, request, looked_up=looked_up)
            if not isinstance(recalled, Claim):  # answered from the ledger: nothing runs, nothing new to audit
                return result_reply(envelope, GATEWAY_APP, recalled), None
            claim = recalled
        system = tool.system if tool is not None else None
        if tool is not None:
            result, executed = await self._pool_call(caller, request, tool, call_id, claim)
        elif request.tool in PLATFORM_TOOLS:
            system = source_app_of(request.context.delivery)
            result, executed = await self._platform_call(caller, request, PLATFORM_TOOLS[request.tool], call_id, claim)
        else:
            result, executed = classify.failed("denied", "unknown_tool", f"no tool named {request.tool!r}"), False
        if claim is not None and claim.answered is not None:  # another claim had it first: its answer, as it is
            return result_reply(envelope, GATEWAY_APP, claim.answered), None
        result = msgspec.structs.replace(result, duration_ms=round((time.perf_counter() - started) * 1000, 3))
        if claim is not None:  # before the reply: whoever asks again from now on gets this result
            await claim.finish(result)
        record = CallRecord(request=request, tool=tool, result=result, system=system, call_id=call_id,
                            executed=executed, trace=envelope.header.trace, caller=caller)
        return result_reply(envelope, system or GATEWAY_APP, result), record

    async def report(self, record: CallRecord | None) -> None:
        """Audit the call and, when it ran, make it a `tool.*` event."""
        if record is not None and self._on_result is not None:
            await self._on_result(record)

    async def _pool_call(self, caller: Caller, request: ToolCallRequest, tool: ToolDefinition, call_id: str,
                         claim: Claim | None) -> tuple[ToolCallResult, bool]:
        agent = await self._pool.agent(caller.agent) if caller.agent else None
        refusal = binding_refusal(caller, self._tool_state(tool, agent), agent)
        if refusal is not None:
            unrelated = refusal.reason in ("unknown_agent", "agent_disabled")  # about the agent, not the tool
            return classify.failed(refusal.status, refusal.reason, refusal.detail,
                                   side_effect=None if unrelated else tool.side_effect), False
        ctx = request.context
        checked = self._arguments.refusal(tool, request.arguments) or _suppressed_if_synthetic(
            ctx, tool.name, tool.name, request.arguments, tool.side_effect)
        if checked is not None:
            return checked, False
        chat = agent is not None and agent.chat_approval and ctx.delivery is not None  # edge calls have no chat
        gate = await self._gate.admit(caller, request, tool, call_id, chat_asked=chat,
                                      locale=agent.locale if agent is not None else None)
        if isinstance(gate, ToolCallResult):
            return gate, False
        if claim is not None:
            target = targets.target_of(tool, request.timeout_seconds, self._mcp.sessions, self._pool.systems)
            taken = await claim.take(side_effect=tool.side_effect, target=target.name, timeout=target.timeout,
                                     deduplicates=target.deduplicates)
            if taken is not None:
                return taken, False
        sending(request.tool, tool.side_effect)  # from here a failure may follow a call sent
        execution = tool.execution
        if isinstance(execution, McpExecution):
            result = await self._mcp.execute(request, tool, execution, call_id, caller)
        else:
            result = (await self._a2a.execute(request, tool, execution, call_id, caller)
                      if isinstance(execution, A2AExecution) else await self._http.execute(request, tool, call_id))
            if result.status == "denied":  # refused before anything was sent (an undeclared secret): nothing ran
                return msgspec.structs.replace(result, approval_id=gate), False
        return msgspec.structs.replace(result, approval_id=gate), True

    def _tool_state(self, tool: ToolDefinition, agent: Agent | None) -> ToolState:
        deprecated = tool.state == "DEPRECATED"
        if agent is None:
            return ToolState(tool.name, deprecated, self._executable(tool))
        if not agent.enabled or tool.name not in agent.tools:
            return ToolState(tool.name, deprecated, None)
        exclusion = available_tools(agent.tools, self._pool.tools, self._executable).reason_for(tool.name)
        if exclusion is None:  # in the available set: it can run (asked no further, on the agents' hot path)
            return ToolState(tool.name, deprecated, None)
        return ToolState(tool.name, deprecated, self._executable(tool), (exclusion.reason, exclusion.detail))

    async def _platform_call(self, caller: Caller, request: ToolCallRequest, spec: PlatformTool, call_id: str,
                             claim: Claim | None = None) -> tuple[ToolCallResult, bool]:
        prepared = await self._platform.prepare(request, spec)
        if isinstance(prepared, ToolCallResult):
            return prepared, False
        suppressed = _suppressed_if_synthetic(request.context, spec.name, prepared.app_tool.name,
                                              prepared.arguments, spec.side_effect)
        if suppressed is not None:
            return suppressed, False
        gate = await self._gate.admit(caller, request, spec, call_id, gated=spec.needs_approval)
        if isinstance(gate, ToolCallResult):
            return gate, False
        result, executed = await self._platform.send(request, prepared, claim, caller)
        return (msgspec.structs.replace(result, approval_id=gate) if gate else result), executed

    async def reply_in_event(self, context: ToolCallContext, text: str, *, call_id: str,
                             interaction_id: str | None = None) -> ToolCallResult:
        """`event_reply` for the call's event (an app asking its user, see `elicitation`; an
        approval asked in the chat); the gateway's own call, on the record like any call.
        A question's `interaction_id` goes beside the text, for the app to attach answers to."""
        arguments = {"text": text} if interaction_id is None else {"text": text, "interaction_id": interaction_id}
        asking = ToolCallRequest(tool="event_reply", arguments=arguments,
                                 context=msgspec.structs.replace(context, approval_id=None))
        result, executed = await self._platform_call(PLATFORM, asking, PLATFORM_TOOLS["event_reply"], call_id)
        if self._on_result is not None:
            await self._on_result(CallRecord(request=asking, tool=None, result=result, executed=executed,
                                             call_id=call_id, system=source_app_of(context.delivery), caller=PLATFORM))
        return result

    async def _ask_in_event(self, context: ToolCallContext, text: str, call_id: str,
                            interaction_id: str | None = None) -> ToolCallResult:
        return await self.reply_in_event(context, text, call_id=call_id, interaction_id=interaction_id)

    async def locale_of(self, context: ToolCallContext) -> str | None:
        """The language of the call's conversation: its agent's `locale` (None: the default)."""
        agent = await self._pool.agent(context.agent) if context.agent else None
        return agent.locale if agent is not None else None


def _suppressed_if_synthetic(ctx: ToolCallContext, name: str, would_call: str, arguments: dict[str, object],
                             side_effect: SideEffect) -> ToolCallResult | None:
    """A synthetic run never reaches a side effect; the result says what would have been done."""
    if not ctx.synthetic or side_effect == "read":
        return None
    return ToolCallResult(status="suppressed", side_effect=side_effect,
                          content=[{"type": "text", "text": f"synthetic run: {name} was not called"}],
                          structured={"would_call": would_call, "arguments": arguments})
