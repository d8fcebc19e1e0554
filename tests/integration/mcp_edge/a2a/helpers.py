"""Helpers of the A2A tests: a playbook agent bound to `a2a.message.received`, its token, and
the official Python SDK client with the bearer token."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, create_client
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageConfiguration, SendMessageRequest, StreamResponse, Task
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.apps_config import ECHO

SUBJECTS = Subjects("amp")
ECHO_TOOL = f"{ECHO}.echo"
COUNTER_INC = f"{ECHO}.counter_increment"


def reader(agent_id: str) -> dict[str, Any]:
    """Echoes the message's text back: a read, no approval."""
    step = {"id": "say", "tool": ECHO_TOOL, "arguments": {"value": "{{ event.data.text }}"}}
    return {"kind": "Agent", "id": agent_id, "agent_kind": "playbook", "events": ["a2a.message.received"],
            "description": "Says back what it is told", "tools": [ECHO_TOOL],
            "playbook": {"steps": [step], "answer": "echoed {{ steps.say.structured.value }}"}}


def writer(agent_id: str) -> dict[str, Any]:
    """Counts under the message's text: a write, held for approval."""
    step = {"id": "count", "tool": COUNTER_INC, "arguments": {"key": "{{ event.data.text }}"}}
    return {"kind": "Agent", "id": agent_id, "agent_kind": "playbook", "events": ["a2a.message.received"],
            "tools": [COUNTER_INC],
            "playbook": {"steps": [step], "answer": "count is {{ steps.count.structured.count }}"}}


async def agent_with_token(nc: NATS, document: dict[str, Any]) -> str:
    """Apply the agent and its binding (events of this agent's endpoint only); the token's secret."""
    agent_id = document["id"]
    await admin_request(nc, SUBJECTS, "agents", "apply", {"document": document}, timeout=20)
    binding = {"kind": "Binding", "id": f"a2a-{agent_id}", "event_pattern": "a2a.message.received",
               "filters": [{"field": "data.agent", "op": "eq", "value": agent_id}],
               "target_type": "agent", "target_id": agent_id}
    await admin_request(nc, SUBJECTS, "bindings", "apply", {"document": binding}, timeout=20)
    created: dict[str, Any] = await admin_request(nc, SUBJECTS, "tokens", "create", {"agent": agent_id}, timeout=10)
    secret: str = created["token"]
    return secret


@asynccontextmanager
async def a2a_client(base: str, agent_id: str, secret: str, *, streaming: bool = False,
                     binding: str = "JSONRPC") -> AsyncIterator[Client]:
    """The SDK's client from the agent's card, as an A2A caller would make it."""
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {secret}"}, timeout=60) as http:
        config = ClientConfig(httpx_client=http, streaming=streaming, supported_protocol_bindings=[binding])
        client = await create_client(f"{base}/agents/{agent_id}", config)
        try:
            yield client
        finally:
            await client.close()


def text_message(text: str, *, immediately: bool = False) -> SendMessageRequest:
    return SendMessageRequest(message=Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER,
                                              parts=[Part(text=text)]),
                              configuration=SendMessageConfiguration(return_immediately=immediately))


async def sent(client: Client, text: str) -> Task:
    """Send without streaming: the one response is the task (settled, or as it is after the wait)."""
    responses = [r async for r in client.send_message(text_message(text))]
    return task_of(responses[0])


def task_of(response: StreamResponse) -> Task:
    assert response.HasField("task"), response
    return response.task


def status_text(task: Task) -> str:
    return "".join(part.text for part in task.status.message.parts)


def answer_of(task: Task) -> str:
    return "".join(part.text for artifact in task.artifacts for part in artifact.parts)
