"""A write held for approval, as an MCP task (the `io.modelcontextprotocol/tasks` extension).

A 2026-07-28 client that declares the extension in its request's capabilities is not held in an
open HTTP request while a person decides (`hold`): its `tools/call` answers at once with a task
(`resultType: "task"`, status `working`, the message naming the approval), and the client polls
`tasks/get`. The approval is decided where Aurora's approvals are (the CLI, the console, chat),
by whoever policy says, never by the calling client, so the task never asks the client for
input; `tasks/update` is acknowledged and its answers ignored, as the extension says of keys
that are not outstanding. Each poll takes the same decision `hold.decided` takes: granted, the
call runs once with the approval and the task completes with its result; denied, expired or
used, it completes with the tool error that says so (a tool error is a completed task's result,
not a failed task). `tasks/cancel` of a task still waiting ends it; its approval then runs
nothing.

The record is in NATS KV before the task is answered (a `tasks/get` to any instance finds it),
in the sessions bucket under `task.<id>`: the edge's per-client state, so the secured
deployment's permissions need nothing more, and its one-day TTL is the task's `ttlMs`. The
instance that moves a task from waiting to running does so by a compare-and-set on the record,
so two instances polling at once run the call once.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

import msgspec
from mcp_types import CLIENT_CAPABILITIES_META_KEY
from nats.js.errors import KeyNotFoundError, KeyWrongLastSequenceError
from nats.js.kv import KeyValue

from services.mcp_edge.gate import Caller
from services.mcp_edge.hold import Gating, decided
from services.mcp_edge.sessions import DAY
from shared.clock import now_iso
from shared.contracts.envelope import Trace
from shared.contracts.toolcall import ToolCallResult
from shared.errors import AuroraError

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
TTL_MS = int(DAY * 1000)
POLL_INTERVAL_MS = 1000
_TASK_ID = re.compile(r"^edge-[0-9a-f]{32}$")  # `hold.new_task_id`; keeps KV key syntax out of reach
State = Literal["waiting", "running", "completed", "cancelled"]
Render = Callable[[ToolCallResult], dict[str, Any]]


class UnknownTask(AuroraError):
    """No task of this caller has that id (another token's task is not told apart from none)."""


class TaskRecord(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    agent: str
    token_id: str
    token_name: str
    tool: str
    arguments: dict[str, Any]
    approval_id: str
    state: State
    created_at: str
    updated_at: str
    trace: Trace | None = None
    result: ToolCallResult | None = None


_decoder = msgspec.json.Decoder(TaskRecord)


def declares_tasks(meta: Mapping[str, Any] | None) -> bool:
    """Whether this request's client declared the tasks extension (2026-07-28 `_meta`)."""
    capabilities = (meta or {}).get(CLIENT_CAPABILITIES_META_KEY)
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else None
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def _key(task_id: str) -> str:
    return f"task.{task_id}"


class EdgeTasks:
    def __init__(self, kv: KeyValue, gate: Gating, render: Render) -> None:
        self._kv = kv
        self._gate = gate
        self._render = render  # a gateway result as MCP's CallToolResult, as a JSON object

    async def create(self, caller: Caller, tool: str, arguments: dict[str, Any], *, task_id: str,
                     approval_id: str) -> dict[str, Any]:
        """The task for a call waiting for `approval_id`, stored before it is answered."""
        at = now_iso()
        record = TaskRecord(id=task_id, agent=caller.agent, token_id=caller.token_id, token_name=caller.token_name,
                            tool=tool, arguments=arguments, approval_id=approval_id, state="waiting",
                            created_at=at, updated_at=at, trace=caller.trace)
        await self._kv.create(_key(task_id), msgspec.json.encode(record))
        return {"resultType": "task", **self.view(record)}

    async def get(self, caller: Caller, task_id: str) -> dict[str, Any]:
        """The task now; a waiting one whose approval was decided is finished first."""
        record, revision = await self._read(caller, task_id)
        if record.state == "waiting":
            record = await self._advance(caller, record, revision)
        return self.view(record)

    async def cancel(self, caller: Caller, task_id: str) -> None:
        """A waiting task ends cancelled; one already running or ended is left as it is."""
        record, revision = await self._read(caller, task_id)
        if record.state == "waiting":
            await self._write(record, revision, state="cancelled")

    async def update(self, caller: Caller, task_id: str) -> None:
        """Input for a task: this edge asks none (approvals are not the client's to give)."""
        await self._read(caller, task_id)

    def view(self, record: TaskRecord) -> dict[str, Any]:
        task: dict[str, Any] = {
            "taskId": record.id, "status": "working" if record.state in ("waiting", "running") else record.state,
            "statusMessage": self._message(record), "createdAt": record.created_at,
            "lastUpdatedAt": record.updated_at, "ttlMs": TTL_MS, "pollIntervalMs": POLL_INTERVAL_MS}
        if record.state == "completed" and record.result is not None:
            task["result"] = {"resultType": "complete", **self._render(record.result)}
        return task

    @staticmethod
    def _message(record: TaskRecord) -> str:
        if record.state == "waiting":
            return f"waiting for approval {record.approval_id} ({record.tool})"
        if record.state == "running":
            return f"approval {record.approval_id} granted: calling {record.tool}"
        if record.state == "cancelled":
            return f"cancelled by the client; approval {record.approval_id} runs nothing"
        status = record.result.status if record.result is not None else "unknown"
        return f"{record.tool}: {status}"

    async def _advance(self, caller: Caller, record: TaskRecord, revision: int) -> TaskRecord:
        approval = await self._gate.approval(record.approval_id)
        if approval is not None and approval.state == "pending":
            return record
        try:  # this instance runs it, or another already does
            revision = await self._write(record, revision, state="running")
        except KeyWrongLastSequenceError:
            return (await self._read(caller, record.id))[0]
        # Shielded: a poll whose client goes must not leave the task running with nobody to finish it.
        return await asyncio.shield(self._run(msgspec.structs.replace(record, state="running"), revision))

    async def _run(self, running: TaskRecord, revision: int) -> TaskRecord:
        on_behalf = Caller(running.agent, running.token_id, running.token_name, trace=running.trace)
        result = await decided(self._gate, on_behalf, running.tool, running.arguments, task_id=running.id,
                               approval_id=running.approval_id)
        if result is None:  # pending again cannot happen; were it to, the task waits on
            await self._write(running, revision, state="waiting")
            return msgspec.structs.replace(running, state="waiting")
        finished = msgspec.structs.replace(running, state="completed", result=result, updated_at=now_iso())
        await self._kv.update(_key(running.id), msgspec.json.encode(finished), last=revision)
        return finished

    async def _write(self, record: TaskRecord, revision: int, *, state: State) -> int:
        changed = msgspec.structs.replace(record, state=state, updated_at=now_iso())
        return await self._kv.update(_key(record.id), msgspec.json.encode(changed), last=revision)

    async def _read(self, caller: Caller, task_id: str) -> tuple[TaskRecord, int]:
        if not _TASK_ID.fullmatch(task_id):
            raise UnknownTask(f"no task {task_id!r}")
        try:
            entry = await self._kv.get(_key(task_id))
        except KeyNotFoundError:
            raise UnknownTask(f"no task {task_id!r}") from None
        if not entry.value or entry.revision is None:
            raise UnknownTask(f"no task {task_id!r}")
        record = _decoder.decode(entry.value)
        if record.token_id != caller.token_id or record.agent != caller.agent:
            raise UnknownTask(f"no task {task_id!r}")
        return record, entry.revision
