"""Each agent as an A2A v1.0 server, through the official Python SDK client: the card, a read
that completes, a write that waits in input-required for an approval granted from the CLI, a
denied one, a cancel, and a task no other token can see."""

from __future__ import annotations

import asyncio
import json
import re

import httpx
import pytest
from a2a.client import A2ACardResolver
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError
from nats.aio.client import Client as NATS

from shared.nats.admin_service import admin_request
from tests.harness.cli import cli_runner
from tests.harness.runner_stack import RUNNER_ENV
from tests.harness.stack import Stack
from tests.harness.waiting import poll
from tests.integration.mcp_edge.a2a.helpers import (
    COUNTER_INC,
    ECHO_TOOL,
    SUBJECTS,
    a2a_client,
    agent_with_token,
    answer_of,
    reader,
    sent,
    status_text,
    task_of,
    text_message,
    writer,
)

APPROVAL = re.compile(r"aurora approvals grant (\S+)`")


async def test_the_card_names_the_tools_the_bindings_and_the_token(a2a_stack: Stack, anc: NATS) -> None:
    await agent_with_token(anc, reader("a2a-card"))
    async with httpx.AsyncClient() as http:  # no token: discovery comes first
        card = await A2ACardResolver(http, f"{a2a_stack.edge()}/agents/a2a-card").get_agent_card()
        unknown = await http.get(f"{a2a_stack.edge()}/agents/a2a-nobody/.well-known/agent-card.json")
    assert card.name == "a2a-card" and card.description == "Says back what it is told"
    assert [s.id for s in card.skills] == [ECHO_TOOL]
    assert {i.protocol_binding: i.url for i in card.supported_interfaces} == {
        "JSONRPC": f"{a2a_stack.edge()}/agents/a2a-card/a2a",
        "HTTP+JSON": f"{a2a_stack.edge()}/agents/a2a-card/a2a/rest"}
    assert card.security_schemes["aurora_token"].http_auth_security_scheme.scheme == "Bearer"
    assert unknown.status_code == 404


@pytest.mark.parametrize(("binding", "streaming"), [("JSONRPC", False), ("HTTP+JSON", True)])
async def test_a_read_completes_with_its_answer(a2a_stack: Stack, anc: NATS, binding: str, streaming: bool) -> None:
    agent_id = f"a2a-read-{'stream' if streaming else 'send'}"
    secret = await agent_with_token(anc, reader(agent_id))
    async with a2a_client(a2a_stack.edge(), agent_id, secret, streaming=streaming, binding=binding) as client:
        responses = [r async for r in client.send_message(text_message("pumps in hall 3"))]
        task = task_of(responses[0])
        got = await client.get_task(GetTaskRequest(id=task.id))
    assert got.status.state == TaskState.TASK_STATE_COMPLETED, got
    assert answer_of(got) == "echoed pumps in hall 3"
    stored = await admin_request(anc, SUBJECTS, "tasks", "get", {"id": task.id})  # the A2A task is Aurora's task
    assert stored["state"] == "succeeded" and stored["event_type"] == "a2a.message.received"
    assert stored["answer"] == "echoed pumps in hall 3"


async def test_a_write_waits_for_an_approval_granted_from_the_cli(a2a_stack: Stack, anc: NATS) -> None:
    agent_id = "a2a-write-grant"
    secret = await agent_with_token(anc, writer(agent_id))
    events: list[StreamResponse] = []
    async with a2a_client(a2a_stack.edge(), agent_id, secret, streaming=True) as client:
        async def until_input_required() -> TaskStatus:
            async for response in client.send_message(text_message(agent_id)):
                events.append(response)
                shown = response.task.status if response.HasField("task") else response.status_update.status
                if shown.state == TaskState.TASK_STATE_INPUT_REQUIRED:
                    return shown
            raise AssertionError(f"the stream ended without input-required: {[str(e) for e in events]}")

        shown = await asyncio.wait_for(until_input_required(), 30)
        question = "".join(p.text for p in shown.message.parts)
        found = APPROVAL.search(question)
        assert found and COUNTER_INC in question, [str(e) for e in events]
        task_id = events[0].task.id
        waiting = await client.get_task(GetTaskRequest(id=task_id))
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        rest: list[StreamResponse] = []
        resubscribed = asyncio.Event()

        async def follow() -> None:  # resubscribed while it waits, it hears the rest
            async for response in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                rest.append(response)
                resubscribed.set()

        following = asyncio.create_task(follow())
        await asyncio.wait_for(resubscribed.wait(), 20)
        assert task_of(rest[0]).status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        granted = cli_runner(a2a_stack.url)("approvals", "grant", found.group(1))
        assert granted.returncode == 0, granted.stderr
        await asyncio.wait_for(following, 30)
        done = await client.get_task(GetTaskRequest(id=task_id))
    assert rest[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED, [str(r) for r in rest]
    assert done.status.state == TaskState.TASK_STATE_COMPLETED and answer_of(done) == "count is 1"


async def test_a_denied_write_is_rejected_with_the_reason(a2a_stack: Stack, anc: NATS) -> None:
    agent_id = "a2a-write-deny"
    secret = await agent_with_token(anc, writer(agent_id))
    async with a2a_client(a2a_stack.edge(), agent_id, secret) as client:
        waiting = await sent(client, agent_id)
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, waiting
        approval_id = waiting.metadata["aurora.approval_id"]
        denied = cli_runner(a2a_stack.url)("approvals", "deny", approval_id, "--note", "not today")
        assert denied.returncode == 0, denied.stderr

        async def rejected() -> Task | None:
            task = await client.get_task(GetTaskRequest(id=waiting.id))
            return task if task.status.state == TaskState.TASK_STATE_REJECTED else None

        final = await poll(rejected, what="the A2A task rejected", interval=0.1)
    assert "not today" in status_text(final)


async def test_a_waiting_task_is_cancelled(a2a_stack: Stack, anc: NATS) -> None:
    agent_id = "a2a-cancel"
    secret = await agent_with_token(anc, writer(agent_id))
    async with a2a_client(a2a_stack.edge(), agent_id, secret) as client:
        waiting = await sent(client, agent_id)
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, waiting
        cancelled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
        with pytest.raises(TaskNotCancelableError):  # a final task cannot be cancelled again
            await client.cancel_task(CancelTaskRequest(id=waiting.id))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED, cancelled
    stored = await admin_request(anc, SUBJECTS, "tasks", "get", {"id": waiting.id})
    assert stored["state"] == "cancelled", json.dumps(stored)[:2000]


async def test_another_token_sees_no_task_and_no_token_gets_nothing(a2a_stack: Stack, anc: NATS) -> None:
    agent_id = "a2a-private"
    secret = await agent_with_token(anc, reader(agent_id))
    other: str = (await admin_request(anc, SUBJECTS, "tokens", "create", {"agent": agent_id}, timeout=10))["token"]
    async with a2a_client(a2a_stack.edge(), agent_id, secret) as client:
        task = await sent(client, "mine")
    async with a2a_client(a2a_stack.edge(), agent_id, other) as client:
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id=task.id))
        with pytest.raises(TaskNotFoundError):  # not even a task id
            await client.get_task(GetTaskRequest(id="../*"))
    async with httpx.AsyncClient() as http:
        anonymous = await http.get(f"{a2a_stack.edge()}/agents/{agent_id}/a2a/rest/tasks/{task.id}")
    assert anonymous.status_code == 401 and "www-authenticate" in anonymous.headers


async def test_a_message_sent_while_no_runner_runs_is_done_once_one_is_back(a2a_stack: Stack, anc: NATS) -> None:
    agent_id = "a2a-no-runner"
    secret = await agent_with_token(anc, reader(agent_id))
    runners = {tag: process for tag, process in a2a_stack.processes.items() if process in a2a_stack.of("runner")}
    for process in runners.values():
        process.terminate()
    try:
        async with a2a_client(a2a_stack.edge(), agent_id, secret) as client:
            responses = [r async for r in client.send_message(text_message("later", immediately=True))]
            queued = task_of(responses[0])
            assert queued.status.state == TaskState.TASK_STATE_SUBMITTED, queued  # routed, not taken yet
            got = await client.get_task(GetTaskRequest(id=queued.id))
            assert got.status.state == TaskState.TASK_STATE_SUBMITTED, got
            for tag in runners:
                await a2a_stack.serving("runner", tag, **RUNNER_ENV)

            async def completed() -> Task | None:
                task = await client.get_task(GetTaskRequest(id=queued.id))
                return task if task.status.state == TaskState.TASK_STATE_COMPLETED else None

            done = await poll(completed, what="the A2A task completed by the runner started again", timeout=60)
    finally:
        for tag in runners:
            if not a2a_stack.processes[tag].alive():
                await a2a_stack.serving("runner", tag, **RUNNER_ENV)
    assert answer_of(done) == "echoed later"


async def test_a_v0_3_client_speaking_message_send_is_answered_too(a2a_stack: Stack, anc: NATS) -> None:
    agent_id = "a2a-v03"
    secret = await agent_with_token(anc, reader(agent_id))
    url = f"{a2a_stack.edge()}/agents/{agent_id}/a2a"
    send = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": {
        "kind": "message", "messageId": "m-03", "role": "user", "parts": [{"kind": "text", "text": "old style"}]}}}
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=60) as http:
        sent_task = (await http.post(url, json=send)).json()
        task_id = sent_task["result"]["id"]
        got = (await http.post(url, json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get",
                                          "params": {"id": task_id}})).json()
    assert got["result"]["status"]["state"] == "completed", got
    assert got["result"]["artifacts"][0]["parts"][0]["text"] == "echoed old style"
