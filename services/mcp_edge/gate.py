"""The edge's side of the gateway: an agent's available set, and calls on the edge subject.

The gateway stays the one enforcement point (policy, approvals, audit). The edge only says
which agent's endpoint was called (the bearer token's agent) and who called (the token), on a
subject no other identity may publish to.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js.errors import KeyNotFoundError
from nats.js.kv import KeyValue

from shared.clock import now_iso
from shared.contracts.approval import Approval
from shared.contracts.envelope import Header, Source, Trace
from shared.contracts.subjects import Subjects
from shared.contracts.toolcall import (
    METHOD_CALL,
    ToolActor,
    ToolCallContext,
    ToolCallEnvelope,
    ToolCallRequest,
    ToolCallResult,
    ToolError,
    decode_result,
    encode,
)
from shared.nats.admin_service import admin_request

EDGE_APP = "aurora.edge"
_approval = msgspec.json.Decoder(Approval)


@dataclass(frozen=True)
class EdgeTool:
    name: str
    description: str
    input_schema: dict[str, Any]
    side_effect: str


@dataclass(frozen=True)
class Caller:
    """Who calls, as the bearer token says: the audit's actor (`token:<id>`)."""

    agent: str
    token_id: str
    token_name: str
    session_id: str | None = None
    capabilities: frozenset[str] = frozenset()  # what the client declared in `initialize` (2025-11-25)
    trace: Trace | None = None  # the W3C trace context of this request's `_meta`, which the call continues

    @property
    def actor(self) -> ToolActor:
        return ToolActor(id=f"token:{self.token_id}", kind="api")


def tools_from_reply(reply: dict[str, Any]) -> list[EdgeTool]:
    """The pool tools of `agents.tools`' reply. The platform's `event_*`/`platform_*` tools act on
    an event's conversation, which an external caller has none of: they are left out (they are
    the names without an app prefix)."""
    functions = {f["function"]["name"]: f["function"] for f in reply.get("tools", []) if "function" in f}
    tools: list[EdgeTool] = []
    for entry in reply.get("available", []):
        name = entry.get("name")
        function = functions.get(entry.get("llm_name"), {})
        if not isinstance(name, str) or "." not in name:
            continue
        schema = function.get("parameters")
        tools.append(EdgeTool(name=name, description=str(function.get("description") or name),
                              input_schema=schema if isinstance(schema, dict) else {"type": "object"},
                              side_effect=str(entry.get("side_effect") or "write")))
    return tools


def unreachable(message: str) -> ToolCallResult:
    return ToolCallResult(status="unavailable", error=ToolError(code="gateway_unavailable", message=message))


class Gate:
    def __init__(self, nc: NATS, subjects: Subjects, approvals: KeyValue, *, call_timeout: float) -> None:
        self._nc = nc
        self._subjects = subjects
        self._approvals = approvals
        self._call_timeout = call_timeout

    async def tools(self, agent: str) -> list[EdgeTool] | None:
        """The agent's available set now; None when there is no such agent."""
        try:
            reply = await admin_request(self._nc, self._subjects, "agents", "tools", {"agent": agent})
        except Exception as exc:
            if getattr(exc, "code", None) == "unknown_agent":
                return None
            raise
        if not reply.get("enabled", True):
            return []
        return tools_from_reply(reply)

    async def agent_exists(self, agent: str) -> bool:
        """Whether the gateway knows `agent` (a token is made only for one that exists)."""
        return await self.tools(agent) is not None

    async def call(self, caller: Caller, tool: str, arguments: dict[str, Any], *, task_id: str,
                   approval_id: str | None = None) -> ToolCallResult:
        context = ToolCallContext(agent=caller.agent, task_id=task_id, actor=caller.actor,
                                  session_id=caller.session_id, approval_id=approval_id)
        envelope = ToolCallEnvelope(
            header=Header(method=METHOD_CALL, message_id=str(uuid.uuid4()), timestamp=now_iso(),
                          source=Source(app=EDGE_APP), trace=caller.trace),
            payload=ToolCallRequest(tool=tool, arguments=arguments, context=context,
                                    timeout_seconds=self._call_timeout),
        )
        try:
            msg = await self._nc.request(self._subjects.edge_tool_call, encode(envelope),
                                         timeout=self._call_timeout + 5)
        except NoRespondersError:
            return unreachable("no gateway answers tool calls now; nothing was called")
        except NatsTimeout:
            return ToolCallResult(status="outcome_unknown", error=ToolError(
                code="gateway_timeout", message="the gateway did not answer in time: the call may have run"))
        return decode_result(msg.data).payload

    async def approval(self, approval_id: str) -> Approval | None:
        try:
            entry = await self._approvals.get(approval_id)
        except KeyNotFoundError:
            return None
        return _approval.decode(entry.value) if entry.value else None
