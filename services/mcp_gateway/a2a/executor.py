"""A call of a remote A2A agent's skill: the message sent, the remote task followed to its end
within the call's timeout, and its end classified as any tool call's.

| the remote task                     | the tool call                                                 |
|-------------------------------------|---------------------------------------------------------------|
| completed (or a direct message)     | ok: the artifacts' text as text, their data as `structured`   |
| failed / rejected / canceled        | tool_error `a2a_<state>` with the agent's own words           |
| input-required                      | an elicitation of the calling task; the answer goes back as   |
|                                     | the task's next message (declined or unanswered: the remote   |
|                                     | task is canceled, tool_error `input_not_given`)               |
| auth-required                       | tool_error `a2a_auth_required`: the system's credentials      |
| no connection (nothing sent)        | unavailable `connect_failed`                                  |
| refused (HTTP 4xx, an A2A error)    | tool_error `http_<status>` / `a2a_error`: nothing was done    |
| timeout / lost after sending        | a read: timeout / unavailable; a write: outcome_unknown       |

The call's id is the message id and `aurora.idempotency_key` in its metadata; an agent that
deduplicates on it (the system's `a2a.deduplicates`) makes a call in doubt safe to send again:
a write whose first message was lost on the way back (the connection failed after it went out,
before the agent named a task) is sent once more at once, within the call's time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import httpx
import mcp_types as types
from a2a.client.errors import A2AClientError
from a2a.types.a2a_pb2 import Message, Task, TaskState
from a2a.utils.errors import A2AError

from services.mcp_gateway.a2a.remote_task import (
    Conversation,
    RemoteProtocolError,
    answer_message,
    client_for,
    data_of,
    first_message,
    text_of,
)
from services.mcp_gateway.calls import classify
from services.mcp_gateway.calls.caller import Caller
from services.mcp_gateway.calls.in_flight import CallsInFlight
from services.mcp_gateway.server_requests.callbacks import ServerRequests
from services.mcp_gateway.systems.secrets import DeclaredSecrets, SecretMissing, UndeclaredSecret
from shared.contracts.system import AuthHeader, System
from shared.contracts.toolcall import ToolCallContext, ToolCallResult, ToolError, ToolStatus
from shared.contracts.tooldef import A2AExecution, ToolDefinition
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway.a2a")

_ENDED = {TaskState.TASK_STATE_FAILED: "failed", TaskState.TASK_STATE_REJECTED: "rejected",
          TaskState.TASK_STATE_CANCELED: "canceled"}
MAX_QUESTIONS = 5  # a remote agent that keeps asking is stopped after this many answers
ANSWER_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "description": "Your answer"}},
                 "required": ["answer"]}
CANCEL_SECONDS = 2.0  # how long a call out of time waits for the remote task's cancel
INSTANCE = "a2a"  # the second half of the key its questions are asked under: (system, "a2a")


class A2ACalls:
    """`asks`: the gateway's server requests, through which a remote question becomes an
    elicitation of the calling task (None: every question is declined)."""

    def __init__(self, calls: CallsInFlight, asks: ServerRequests | None = None, *,
                 secrets: Callable[[AuthHeader], str] | None = None, poll_seconds: float = 0.2) -> None:
        self._calls = calls
        self._asks = asks
        self._secrets = secrets or DeclaredSecrets().read
        self._poll_seconds = poll_seconds

    async def execute(self, system: System, tool: ToolDefinition, execution: A2AExecution,
                      arguments: dict[str, Any], *, call_id: str, timeout: float | None,
                      context: ToolCallContext, caller: Caller | None) -> ToolCallResult:
        call = _Call(tool, time.perf_counter())
        if system.type != "a2a" or system.a2a is None or not system.base_url:
            return call.end("tool_error", "invalid_mapping", f"{tool.name} is an A2A tool of a non-A2A system")
        if not system.enabled:
            return call.end("unavailable", "system_disabled", f"system {system.name} is disabled")
        headers: dict[str, str] = {}
        if system.auth is not None:
            try:
                secret = self._secrets(system.auth)
            except UndeclaredSecret as exc:
                return call.end("denied", "secret_not_declared",
                                f"the credential of system {system.name} is refused: {exc}")
            except SecretMissing as exc:
                return call.end("unavailable", "secret_missing",
                                f"the credential of system {system.name} is missing: {exc.where}")
            except (LookupError, OSError) as exc:
                return call.end("unavailable", "secret_missing", f"the credential of system {system.name} "
                                f"cannot be read ({type(exc).__name__})")
            scheme = system.auth.scheme
            headers[system.auth.header] = f"{scheme} {secret}" if scheme else secret
        limit = timeout if timeout is not None else system.timeout_seconds
        client, streaming = client_for(system)
        deadline = asyncio.get_running_loop().time() + limit
        talk = Conversation(client, headers, deadline, streaming, self._poll_seconds)
        key = (system.name, INSTANCE)
        try:
            with self._calls.running(key, tool.name, context, call_id=call_id, timeout=limit,
                                     caller=caller) as running:
                async with asyncio.timeout(limit):
                    try:
                        return await self._converse(call, talk, system, execution, arguments, call_id,
                                                    running.token)
                    except (A2AError, httpx.HTTPError, RemoteProtocolError) as exc:
                        failed = _failed(call, talk, system.name, exc)
                        if not _may_send_again(failed, talk, system):
                            return failed
                        log.info("the connection to a remote agent was lost after a write went out; sent again "
                                 "under its idempotency key", system=system.name, tool=tool.name, call_id=call_id,
                                 error=f"{type(exc).__name__}: {exc}")
                    talk = Conversation(client, headers, deadline, streaming, self._poll_seconds)
                    call.sent_again = 1
                    return await self._converse(call, talk, system, execution, arguments, call_id, running.token)
        except TimeoutError:
            # Out of time: the agent is asked to stop, so a write does not take effect later still.
            canceled = bool(talk.task_id) and await talk.cancel(talk.task_id, within=CANCEL_SECONDS)
            return call.lost(talk.sent, "timeout", f"the remote agent of system {system.name} did not finish "
                             f"within {limit:g}s" + ("; its task was canceled" if canceled else ""),
                             task_id=talk.task_id)
        except (A2AError, httpx.HTTPError, RemoteProtocolError) as exc:
            return _failed(call, talk, system.name, exc)
        finally:
            await client.close()

    async def _converse(self, call: _Call, talk: Conversation, system: System, execution: A2AExecution,
                        arguments: dict[str, Any], call_id: str, token: str) -> ToolCallResult:
        outcome = await talk.send(first_message(call_id, execution.skill, arguments))
        for number in range(1, MAX_QUESTIONS + 2):
            if isinstance(outcome, Message):  # an answer without a task
                text = text_of(outcome.parts)
                return call.end("ok", content=[{"type": "text", "text": text}] if text else [],
                                structured={"state": "completed", "text": text, "data": data_of(outcome.parts)})
            task = outcome
            state = task.status.state
            said = text_of(task.status.message.parts)
            if state == TaskState.TASK_STATE_COMPLETED:
                return _completed(call, task)
            if state in _ENDED:
                name = _ENDED[state]
                return call.end("tool_error", f"a2a_{name}", f"the remote agent's task {name}: "
                                f"{said or 'it gave no reason'}", structured=_view(task, name))
            if state == TaskState.TASK_STATE_AUTH_REQUIRED:
                return call.end("tool_error", "a2a_auth_required", f"the remote agent of system {system.name} "
                                "asks for authentication the gateway cannot give during a call"
                                f"{': ' + said if said else ''}; give the system its credentials (auth)",
                                structured=_view(task, "auth-required"))
            if number > MAX_QUESTIONS:
                break
            answer = await self._ask(system.name, token, said or "The remote agent needs more input.")
            if answer is None:
                await talk.cancel(task.id)
                return call.end("tool_error", "input_not_given", f"the remote agent asked {said!r} and no "
                                "answer was given; its task was canceled", structured=_view(task, "input-required"))
            outcome = await talk.send(answer_message(call_id, number, task, answer))
        if isinstance(outcome, Task):
            await talk.cancel(outcome.id)
        return call.end("tool_error", "too_many_questions", f"the remote agent asked more than {MAX_QUESTIONS} "
                        "questions; its task was canceled")

    async def _ask(self, system: str, token: str, question: str) -> str | None:
        """The calling task's answer to the remote question (None: declined, canceled, unanswered)."""
        if self._asks is None:
            return None
        params = types.ElicitRequestFormParams(message=question, requested_schema=ANSWER_SCHEMA)
        callbacks = self._asks.for_session((system, INSTANCE), system)
        result = await callbacks.input_request(token, types.ElicitRequest(params=params))
        if not isinstance(result, types.ElicitResult) or result.action != "accept" or not result.content:
            return None
        answer = result.content.get("answer")
        return str(answer) if answer not in (None, "") else None


def _completed(call: _Call, task: Task) -> ToolCallResult:
    parts = [part for artifact in task.artifacts for part in artifact.parts] or list(task.status.message.parts)
    text = text_of(parts)
    view = _view(task, "completed")
    view.update({"text": text, "data": data_of(parts)})
    return call.end("ok", content=[{"type": "text", "text": text}] if text else [], structured=view)


def _view(task: Task, state: str) -> dict[str, Any]:
    return {"task_id": task.id, "context_id": task.context_id, "state": state}


def _failed(call: _Call, talk: Conversation, system: str, exc: BaseException) -> ToolCallResult:
    """What an error of the conversation means: nothing sent; refused by the agent (an HTTP 4xx,
    or an A2A error it answered with: nothing was done); or lost on the way (maybe done)."""
    causes = _causes(exc)
    if not talk.sent or any(isinstance(c, httpx.ConnectError) for c in causes):
        return call.end("unavailable", "connect_failed", f"system {system} could not be reached ({exc}); "
                        "nothing was sent")
    refused = next((c.response.status_code for c in causes
                    if isinstance(c, httpx.HTTPStatusError) and c.response.status_code < 500), None)
    if refused is not None:
        return call.end("tool_error", f"http_{refused}", f"system {system} refused the request: HTTP {refused}")
    if isinstance(exc, A2AError) and not isinstance(exc, A2AClientError):
        return call.end("tool_error", "a2a_error", f"the remote agent of system {system} answered with an "
                        f"error: {type(exc).__name__}: {exc}")
    return call.lost(True, "connection_lost", f"the conversation with system {system} failed: {exc}",
                     task_id=talk.task_id)


def _may_send_again(failed: ToolCallResult, talk: Conversation, system: System) -> bool:
    """A write whose first message went out and whose connection failed before the agent named
    a task, to an agent that deduplicates on message ids: it answers the same message once."""
    deduplicates = system.a2a is not None and system.a2a.deduplicates
    return deduplicates and not talk.task_id and classify.in_doubt(failed, "connection_lost")


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in chain:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    return chain


class _Call:
    def __init__(self, tool: ToolDefinition, started: float) -> None:
        self.tool, self.started = tool, started
        self.sent_again = 0  # its first message sent once more after a lost connection

    def end(self, status: ToolStatus, code: str | None = None, message: str = "", *,
            content: list[dict[str, Any]] | None = None, structured: dict[str, Any] | None = None) -> ToolCallResult:
        return ToolCallResult(status=status, content=content or [], structured=structured,
                              error=ToolError(code=code, message=message) if code else None,
                              duration_ms=round((time.perf_counter() - self.started) * 1000, 3),
                              side_effect=self.tool.side_effect, sent_again=self.sent_again)

    def lost(self, sent: bool, code: str, message: str, *, task_id: str = "") -> ToolCallResult:
        """No end heard: a read failed; a write sent may have taken effect (verify before repeating:
        `structured.task_id` names the remote task, when the agent named one)."""
        if not sent:
            return self.end("unavailable", "connect_failed", f"{message}; nothing was sent")
        view = {"task_id": task_id} if task_id else None
        if self.tool.side_effect == "read":
            return self.end("timeout" if code == "timeout" else "unavailable", code, message, structured=view)
        return self.end("outcome_unknown", code, f"{message} after the message was sent; the "
                        f"{self.tool.side_effect} may or may not have taken effect: verify before repeating it",
                        structured=view)
