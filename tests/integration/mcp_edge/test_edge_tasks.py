"""A write held for approval at the edge is an MCP task for a 2026-07-28 client that declared the
`io.modelcontextprotocol/tasks` extension: the call answers at once with the task, `tasks/get`
polls it, `tasks/update` is acknowledged, and the task completes with the call's result once the
approval is granted from the CLI. The official SDK client speaks it through a client extension
that claims the `task` result shape; clients that did not declare it are held as before
(test_edge_approvals.py)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, Literal

import mcp_types as types
import pytest
from mcp.client.client import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from nats.aio.client import Client as NATS
from pydantic import TypeAdapter

from shared.nats.admin_service import admin_request
from tests.harness.cli import cli_runner
from tests.harness.stack import Stack
from tests.harness.waiting import poll
from tests.integration.mcp_edge.helpers import COUNTER_GET, COUNTER_INC, MODERN, SUBJECTS, agent, bearer, token

TASKS = "io.modelcontextprotocol/tasks"
WAITING = re.compile(r"waiting for approval (\S+)")
ANY_OBJECT: TypeAdapter[dict[str, Any]] = TypeAdapter(dict[str, Any])


class CreateTaskResult(types.Result):
    """The extension's `resultType: "task"` answer to `tools/call` (its `Task` fields)."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None = None
    poll_interval_ms: int | None = None


class TaskRequest(types.Request[dict[str, Any], str]):
    method: str
    params: dict[str, Any]


async def unresolved(task: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
    raise AssertionError("the test follows its tasks itself (call_tool with allow_claimed)")


class Tasks(ClientExtension):
    identifier = TASKS

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=unresolved)]


@asynccontextmanager
async def tasks_client(url: str, secret: str, *, declared: bool = True) -> AsyncIterator[Client]:
    async with (bearer(secret) as http, Client(streamable_http_client(url, http_client=http), mode=MODERN,
                                               cache=None, extensions=[Tasks()] if declared else None) as client):
        yield client


async def task_request(client: Client, method: str, task_id: str, **params: Any) -> dict[str, Any]:
    answer: dict[str, Any] = await client.session.send_request(
        TaskRequest(method=method, params={"taskId": task_id, **params}), ANY_OBJECT)
    return answer


async def start(client: Client, key: str) -> tuple[CreateTaskResult, str]:
    started = await asyncio.wait_for(
        client.session.call_tool(COUNTER_INC, {"key": key}, allow_claimed=True), 15)
    assert isinstance(started, CreateTaskResult), started
    found = WAITING.search(started.status_message or "")
    assert started.status == "working" and found, started
    return started, found.group(1)


async def test_a_held_write_is_a_task_that_completes_once_granted_from_the_cli(edge_stack: Stack, enc: NATS) -> None:
    await agent(enc, "edge-task", [COUNTER_INC, COUNTER_GET])
    created = await token(enc, "edge-task")
    url = edge_stack.endpoint("edge-task")
    async with tasks_client(url, created["token"]) as client:
        discovered = await client.session.send_request(types.DiscoverRequest(), types.DiscoverResult)
        assert TASKS in (discovered.capabilities.extensions or {}), discovered
        started, approval_id = await start(client, "edge-task")
        assert started.ttl_ms and started.ttl_ms > 0 and started.poll_interval_ms, started
        pending = await admin_request(enc, SUBJECTS, "approvals", "get", {"id": approval_id})
        assert pending["state"] == "pending" and pending["tool"] == COUNTER_INC, pending

        # durable before it was answered: the other instance knows it
        async with tasks_client(f"{edge_stack.edge(1)}/agents/edge-task/mcp", created["token"]) as elsewhere:
            polled = await task_request(elsewhere, "tasks/get", started.task_id)
        assert polled["status"] == "working" and approval_id in polled["statusMessage"], polled
        acknowledged = await task_request(client, "tasks/update", started.task_id, inputResponses={})
        assert acknowledged == {"resultType": "complete"} or acknowledged.get("resultType") == "complete"

        granted = await asyncio.to_thread(cli_runner(edge_stack.url), "approvals", "grant", approval_id,
                                          "--note", "ok for the task")
        assert granted.returncode == 0, granted.stderr

        async def finished() -> dict[str, Any] | None:
            now = await task_request(client, "tasks/get", started.task_id)
            return now if now["status"] != "working" else None

        done = await poll(finished, what="the task to complete")
        assert done["status"] == "completed", done
        assert done["result"]["structuredContent"] == {"key": "edge-task", "count": 1}, done
        assert done["result"]["isError"] is False and done["result"]["resultType"] == "complete", done
        again = await task_request(client, "tasks/get", started.task_id)  # ran once: the same result
        assert again["result"] == done["result"], again
        counted = await client.call_tool(COUNTER_GET, {"key": "edge-task"})
        assert counted.structured_content == {"key": "edge-task", "count": 1}, counted
    used = await admin_request(enc, SUBJECTS, "approvals", "get", {"id": approval_id})
    assert used["state"] == "consumed", used

    other = await token(enc, "edge-task")  # another token of the same agent: not its task
    async with tasks_client(url, other["token"]) as stranger:
        with pytest.raises(MCPError) as refused:
            await task_request(stranger, "tasks/get", started.task_id)
    assert refused.value.error.code == types.INVALID_PARAMS, refused.value


async def test_a_cancelled_task_runs_nothing_when_granted_later(edge_stack: Stack, enc: NATS) -> None:
    await agent(enc, "edge-task-cancel", [COUNTER_INC, COUNTER_GET])
    created = await token(enc, "edge-task-cancel")
    async with tasks_client(edge_stack.endpoint("edge-task-cancel"), created["token"]) as client:
        started, approval_id = await start(client, "edge-task-cancel")
        cancelled = await task_request(client, "tasks/cancel", started.task_id)
        assert cancelled.get("resultType") == "complete", cancelled
        await admin_request(enc, SUBJECTS, "approvals", "grant", {"id": approval_id, "note": "too late"})
        after = await task_request(client, "tasks/get", started.task_id)
        assert after["status"] == "cancelled" and "result" not in after, after
        counted = await client.call_tool(COUNTER_GET, {"key": "edge-task-cancel"})
    assert counted.structured_content == {"key": "edge-task-cancel", "count": 0}, counted
    granted = await admin_request(enc, SUBJECTS, "approvals", "get", {"id": approval_id})
    assert granted["state"] == "granted", granted  # granted, never used


async def test_a_denied_task_completes_with_the_refusal(edge_stack: Stack, enc: NATS) -> None:
    await agent(enc, "edge-task-deny", [COUNTER_INC])
    created = await token(enc, "edge-task-deny")
    async with tasks_client(edge_stack.endpoint("edge-task-deny"), created["token"]) as client:
        started, approval_id = await start(client, "edge-task-deny")
        await admin_request(enc, SUBJECTS, "approvals", "deny", {"id": approval_id, "note": "not today"})
        done = await task_request(client, "tasks/get", started.task_id)
    assert done["status"] == "completed" and done["result"]["isError"] is True, done
    text = done["result"]["content"][0]["text"]
    assert "approval_denied" in text and "not today" in text, text
