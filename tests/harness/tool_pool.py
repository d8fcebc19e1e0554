"""Calling into a running gateway's tool pool as a runner or the CLI would, and reading what it
left behind: the client the pool and HTTP-system tests share (tests/integration/mcp_gateway/)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.js.api import RawStreamMsg
from nats.js.errors import NotFoundError

from shared.clock import now_iso
from shared.contracts.agent import Agent
from shared.contracts.envelope import Header, Source
from shared.contracts.resource import canonical_json
from shared.contracts.subjects import Subjects
from shared.contracts.toolcall import METHOD_CALL, ToolCallContext, ToolCallEnvelope, ToolCallRequest, decode_result
from shared.jetstream.streams import agents_bucket, audit_stream, ensure_bucket
from shared.nats.admin_service import admin_request
from tests.harness.run_records import dispatched, run_context
from tests.harness.waiting import NOT_SERVING_YET, poll


class Pool:
    """Calls into the running gateway the way a runner or the CLI would."""

    def __init__(self, nc: NATS, subjects: Subjects) -> None:
        self.nc = nc
        self.subjects = subjects

    async def call(self, tool: str, arguments: dict[str, Any], *, call_id: str | None = None,
                   **context: Any) -> dict[str, Any]:
        """One call's result; see `call_with_id`."""
        return (await self.call_with_id(tool, arguments, call_id=call_id, **context))[1]

    async def call_with_id(self, tool: str, arguments: dict[str, Any], *, call_id: str | None = None,
                           **context: Any) -> tuple[str, dict[str, Any]]:
        """One call: (its call id, its result). `call_id` (the envelope's message id, the audit
        record's key) is made up when not given. An agent's call (`agent=`) is a run's: its task
        (or a fresh one) is recorded as that agent's run first, as the router would; without an
        agent it is an operator call."""
        call_id = call_id or str(uuid.uuid4())
        if context.get("agent"):
            context = await agent_run_context(self.nc, self.subjects, **context)
        envelope = ToolCallEnvelope(
            header=Header(method=METHOD_CALL, message_id=call_id, timestamp=now_iso(),
                          source=Source(app="aurora.test")),
            payload=ToolCallRequest(tool=tool, arguments=arguments, context=ToolCallContext(**context)),
        )
        subject = self.subjects.tool_call if context.get("agent") else self.subjects.operator_tool_call
        reply = await self.nc.request(subject, msgspec.json.encode(envelope), timeout=20)
        return call_id, dict(msgspec.to_builtins(decode_result(reply.data).payload))

    async def admin(self, area: str, verb: str, body: dict[str, Any] | None = None) -> Any:
        return await admin_request(self.nc, self.subjects, area, verb, body or {}, timeout=10)

    async def wait_for_tools(self, *names: str, timeout: float = 30.0) -> None:
        async def listed() -> bool:
            try:
                tools = {t["name"] for t in await self.admin("gateway", "tools")}
            except NOT_SERVING_YET:  # the gateway is still starting
                return False
            return set(names) <= tools

        await poll(listed, timeout=timeout, what=f"tools {names} in the gateway's catalog", interval=0.2)


async def call(pool: Pool, tool: str, arguments: dict[str, Any], **context: Any) -> tuple[str, dict[str, Any]]:
    """One call with a call id of our own (the audit record's `call_id`): (call id, result)."""
    return await pool.call_with_id(tool, arguments, call_id=f"cov-{uuid.uuid4().hex[:12]}", **context)


async def agent_run_context(nc: NATS, subjects: Subjects, **context: Any) -> dict[str, Any]:
    """The context with its run recorded: run id = task id (`task_id`, or a fresh one)."""
    run_id = context.get("task_id") or f"run-{uuid.uuid4().hex[:12]}"
    record = await dispatched(nc, subjects, agent=context["agent"], run_id=run_id)
    return {**context, **run_context(record, agent=context["agent"])}


async def published_to(pool: Pool, agent: str, *tools: str) -> None:
    """`agent` (a playbook agent) bound to `tools`, each reviewed and published, and available to it."""
    agents = await ensure_bucket(pool.nc.jetstream(), agents_bucket(pool.subjects))
    await agents.put(agent, canonical_json(Agent(id=agent, agent_kind="playbook", tools=tools)))
    for name in tools:
        await pool.admin("tools", "review", {"name": name})
        await pool.admin("tools", "publish", {"name": name})
    await wait_until_available(pool, agent, *tools)


async def wait_until_available(pool: Pool, agent: str, *names: str, timeout: float = 15.0) -> dict[str, Any]:
    """The agent's tools view once every one of `names` is available to it."""
    async def available() -> dict[str, Any] | None:
        view: dict[str, Any] = await pool.admin("agents", "tools", {"agent": agent})
        return view if set(names) <= {t["name"] for t in view["available"]} else None

    return await poll(available, timeout=timeout, what=f"{names} available to {agent}", interval=0.1)


async def audit_records(pool: Pool) -> list[dict[str, Any]]:
    """Every audit record stored so far, oldest first, consuming nothing."""
    js = pool.nc.jetstream()
    stream = audit_stream(pool.subjects).name
    info = await js.stream_info(stream)
    records: list[dict[str, Any]] = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        msg = await js.get_msg(stream, seq)
        if msg.data:
            records.append(json.loads(msg.data))
    return records


def as_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


async def read_stream(nc: NATS, stream: str, subject: str, until: Callable[[dict[str, Any]], bool],
                      timeout: float = 10.0) -> tuple[list[tuple[RawStreamMsg, dict[str, Any]]], dict[str, Any]]:
    """Every message stored in `stream` on `subject`, from the first, up to the first one `until`
    accepts: (all read, that one). Read by sequence (a direct get, no consumer), so it proves the
    message was stored and takes nothing away (AMP_SIGNALS is a work queue the bridge consumes)."""
    js = nc.jetstream()
    read: list[tuple[RawStreamMsg, dict[str, Any]]] = []
    seq = 1
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = await js.get_msg(stream, seq=seq, subject=subject, next=True)
        except NotFoundError:
            await asyncio.sleep(0.1)
            continue
        assert msg.seq is not None and msg.data is not None
        seq = msg.seq + 1
        data = json.loads(msg.data)
        read.append((msg, data))
        if until(data):
            return read, data
    raise AssertionError(f"nothing matching in {stream} on {subject} within {timeout}s: {[d for _, d in read]}")
