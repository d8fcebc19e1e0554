"""One conversation with a remote A2A agent through the official SDK's client: a message sent,
and the remote task followed until it ends or stops to ask (streamed when the card says the
agent streams, else polled with `tasks/get`).

Nothing here decides what a state means for the tool call (`executor` does); this module only
says where the task stands, and whether anything went out yet (`sent`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from a2a.client import ClientCallContext, ClientConfig, ClientFactory
from a2a.client.client import Client
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskState,
)
from google.protobuf import json_format

from shared.contracts.system import System

FINAL = frozenset({TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED,
                   TaskState.TASK_STATE_REJECTED})
INTERRUPTED = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})
IDEMPOTENCY_KEY = "aurora.idempotency_key"  # in the message's metadata (its id is the key too)
SKILL = "aurora.skill"  # the skill the tool stands for, in the message's metadata
MAX_POLL_SECONDS = 2.0


@dataclass
class Conversation:
    """The SDK client for one call, and whether a message went out already."""

    client: Client
    headers: dict[str, str]
    deadline: float  # loop time after which the call's timeout is over
    streaming: bool
    poll_seconds: float = 0.2
    sent: bool = False
    task_id: str = ""  # the remote task, once the agent named it

    def context(self) -> ClientCallContext:
        left = max(self.deadline - asyncio.get_running_loop().time(), 0.1)
        return ClientCallContext(service_parameters=dict(self.headers), timeout=left)

    async def send(self, message: Message) -> Task | Message:
        """Send `message`; the task as it stands when the agent ends it or stops to ask (or the
        agent's direct answer, when it keeps no task)."""
        request = SendMessageRequest(message=message,
                                     configuration=SendMessageConfiguration(return_immediately=not self.streaming))
        self.sent = True  # from here the remote may have it
        self.task_id = message.task_id
        async for response in self.client.send_message(request, context=self.context()):
            if response.HasField("message"):
                return response.message
            self.task_id = self.task_id or _task_id(response)
            state = _state(response)
            if state in FINAL or state in INTERRUPTED:
                break
        if not self.task_id:
            raise RemoteProtocolError("the agent answered with neither a task nor a message")
        return await self.follow(self.task_id)

    async def follow(self, task_id: str) -> Task:
        """`tasks/get` until the task ends or asks (the stream, when there was one, ended already)."""
        wait = self.poll_seconds
        while True:
            task = await self.client.get_task(GetTaskRequest(id=task_id), context=self.context())
            if task.status.state in FINAL or task.status.state in INTERRUPTED:
                return task
            await asyncio.sleep(wait)
            wait = min(wait * 1.5, MAX_POLL_SECONDS)

    async def cancel(self, task_id: str, *, within: float | None = None) -> bool:
        """Best effort, so that the remote task does not go on (or wait for an answer that will
        not come) once the call has its answer; whether the agent took the cancel."""
        context = self.context() if within is None else ClientCallContext(
            service_parameters=dict(self.headers), timeout=within)
        try:
            async with asyncio.timeout(context.timeout):
                await self.client.cancel_task(CancelTaskRequest(id=task_id), context=context)
        except Exception:  # the answer to our caller is already decided; a failed cancel changes nothing
            return False
        return True


class RemoteProtocolError(Exception):
    """The agent answered outside the protocol."""


def client_for(system: System) -> tuple[Client, bool]:
    """The SDK's client for the system's interface (from the card read at import), with an HTTP
    client of its own closed by `close()` (the SDK's factory sets its version header on any client
    it is lent, so the gateway's shared one is not); (the client, whether the agent streams)."""
    source = system.a2a
    assert source is not None and system.base_url  # a System of type a2a has both (its validator)
    card = AgentCard(name=source.agent_name or system.name,
                     supported_interfaces=[AgentInterface(url=system.base_url, protocol_binding=source.binding,
                                                          protocol_version=source.protocol_version)],
                     capabilities=AgentCapabilities(streaming=source.streaming))
    config = ClientConfig(streaming=source.streaming, supported_protocol_bindings=[source.binding])
    return ClientFactory(config).create(card), source.streaming


def first_message(call_id: str, skill: str, arguments: dict[str, Any]) -> Message:
    """The call as an A2A message: its id is the call's idempotency key (a remote that
    deduplicates on message ids takes a call sent again as the same call)."""
    parts = [Part(text=str(arguments.get("message", "")))]
    data = arguments.get("data")
    if isinstance(data, dict):
        part = Part()
        json_format.ParseDict(data, part.data)
        parts.append(part)
    message = Message(message_id=call_id, role=Role.ROLE_USER, parts=parts)
    message.metadata.update({IDEMPOTENCY_KEY: call_id, SKILL: skill})
    return message


def answer_message(call_id: str, number: int, task: Task, text: str) -> Message:
    """The answer to a remote question, as the next message of the same task."""
    message = Message(message_id=f"{call_id}-answer-{number}", role=Role.ROLE_USER, task_id=task.id,
                      context_id=task.context_id, parts=[Part(text=text)])
    message.metadata.update({IDEMPOTENCY_KEY: call_id})
    return message


def text_of(parts: Any) -> str:
    return "\n".join(p.text for p in parts if p.HasField("text"))


def data_of(parts: Any) -> list[Any]:
    return [json_format.MessageToDict(p.data) for p in parts if p.HasField("data")]


def _task_id(response: StreamResponse) -> str:
    if response.HasField("task"):
        return str(response.task.id)
    if response.HasField("status_update"):
        return str(response.status_update.task_id)
    if response.HasField("artifact_update"):
        return str(response.artifact_update.task_id)
    return ""


def _state(response: StreamResponse) -> int:
    if response.HasField("task"):
        return int(response.task.status.state)
    if response.HasField("status_update"):
        return int(response.status_update.status.state)
    return int(TaskState.TASK_STATE_UNSPECIFIED)
