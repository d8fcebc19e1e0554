"""The A2A operations, answered from Aurora's durable tasks (the SDK's `RequestHandler`).

`SendMessage` publishes the message as an `a2a.message.received` event and answers with the
task its run is: at once when the client asked `returnImmediately`, else once the task is
final or needs input (an approval), or after `wait_seconds`, whichever comes first — the task
goes on either way, and `GetTask`/`SubscribeToTask` follow it. A task is shown only to the
token that sent its message (its run record's actor is `token:<id>`); to any other, it does
not exist. Continuing a task with a second message is not offered: an approval is decided in
Aurora (`aurora approvals grant`), where every approval is.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncGenerator

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from services.mcp_edge.a2a.aurora_tasks import AuroraTasks
from services.mcp_edge.a2a.intake import EmptyMessage, message_data, message_signal
from services.mcp_edge.a2a.task_view import FINAL_STATES, a2a_task, state_of, status_event
from services.mcp_edge.gate import Caller
from shared.contracts.a2a import EDGE_APP
from shared.contracts.task import Task as AuroraTask
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_edge.a2a")
CALLER = "aurora.caller"  # where the context builder (app.py) puts the token's caller
SETTLED = FINAL_STATES | {TaskState.TASK_STATE_INPUT_REQUIRED}


def caller_of(context: ServerCallContext) -> Caller:
    caller = context.state.get(CALLER)
    if not isinstance(caller, Caller):  # the edge authenticates before the SDK runs: a bug if not
        raise RuntimeError("an A2A request reached the handler without an authenticated caller")
    return caller


def submitted(task_id: str, context_id: str) -> Task:
    """A run the router dispatched that no runner has taken yet."""
    return Task(id=task_id, context_id=context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))  # type: ignore[arg-type]


class AuroraRequestHandler(RequestHandler):
    def __init__(self, tasks: AuroraTasks, *, instance: str, wait_seconds: float = 30.0) -> None:
        self._tasks = tasks
        self._instance = instance
        self._wait_seconds = wait_seconds

    # --- sending ------------------------------------------------------------------------------
    async def _start(self, message: Message, caller: Caller) -> tuple[str, str, AuroraTask | None]:
        if message.task_id:
            raise UnsupportedOperationError(
                message="a message continuing a task is not accepted: an approval the task waits for is decided "
                        "in Aurora (aurora approvals grant <id>); send a new message for new work")
        try:
            data = message_data(message, agent=caller.agent, token_id=caller.token_id)
        except EmptyMessage as exc:
            raise InvalidParamsError(message=str(exc)) from None
        signal = message_signal(data, instance=self._instance, event_id=str(uuid.uuid4()))
        await self._tasks.publish(signal)
        found = await self._tasks.find(signal.signal_id, caller.agent)
        if found.task_id is None:
            raise InvalidParamsError(message=(
                f"no binding routed the message (event {signal.signal_id}, type a2a.message.received) to a task "
                f"within {self._tasks.find_seconds:g} s: bind a2a.message.received to agent {caller.agent}"))
        log.info("a2a message", agent=caller.agent, token=caller.token_id, event=signal.signal_id, task=found.task_id)
        return found.task_id, data.context_id, found.task

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task | Message:
        caller = caller_of(context)
        task_id, context_id, task = await self._start(params.message, caller)
        if not params.configuration.return_immediately:
            with contextlib.suppress(TimeoutError):
                task = await asyncio.wait_for(self._settled(task_id), self._wait_seconds)
        return await self._shown(task) if task is not None else submitted(task_id, context_id)

    async def on_message_send_stream(self, params: SendMessageRequest,
                                     context: ServerCallContext) -> AsyncGenerator[Event]:
        caller = caller_of(context)
        task_id, context_id, task = await self._start(params.message, caller)
        yield await self._shown(task) if task is not None else submitted(task_id, context_id)
        async for event in self._changes(task_id, after=task):
            yield event

    # --- following ----------------------------------------------------------------------------
    async def _settled(self, task_id: str) -> AuroraTask:
        last: AuroraTask | None = None
        async with contextlib.aclosing(self._tasks.follow(task_id)) as changes:  # its consumer goes at once
            async for task in changes:
                last = task
                if state_of(task) in SETTLED:
                    return task
        assert last is not None  # follow ends only after a terminal task
        return last

    async def _changes(self, task_id: str, *, after: AuroraTask | None) -> AsyncGenerator[Event]:
        """A status update per change of the task's A2A state (or its question), to the final one."""
        if after is not None and after.terminal:
            return
        shown = (state_of(after), after.approval_id) if after is not None else None
        async with contextlib.aclosing(self._tasks.follow(task_id)) as changes:
            async for task in changes:
                now = (state_of(task), task.approval_id)
                if now != shown:
                    shown = now
                    yield status_event(task, await self._tasks.approval(task.approval_id))
                if task.terminal:
                    return

    async def _shown(self, task: AuroraTask) -> Task:
        return a2a_task(task, await self._tasks.approval(task.approval_id))

    async def _owned(self, task_id: str, caller: Caller) -> AuroraTask | None:
        """The task, if its message came from this caller's token; TaskNotFound otherwise (a
        task of another token, of an app, or none at all look the same)."""
        record = await self._tasks.record(task_id)
        if record is None or record.source_app != EDGE_APP or record.actor is None \
                or record.actor.id != f"token:{caller.token_id}":
            raise TaskNotFoundError
        return await self._tasks.get(task_id)

    # --- reading, cancelling, resubscribing ---------------------------------------------------
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        task = await self._owned(params.id, caller_of(context))
        return await self._shown(task) if task is not None else submitted(params.id, params.id)

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task | None:
        caller = caller_of(context)
        task = await self._owned(params.id, caller)
        if task is not None and task.terminal:
            raise TaskNotCancelableError(message=f"task {task.id} is already {task.state}")
        await self._tasks.cancel(params.id, by=f"token:{caller.token_id}")
        with contextlib.suppress(TimeoutError):  # a running task stops at its next step
            task = await asyncio.wait_for(self._settled(params.id), 10.0)
        task = task if task is not None and task.terminal else await self._tasks.get(params.id)
        return await self._shown(task) if task is not None else submitted(params.id, params.id)

    async def on_subscribe_to_task(self, params: SubscribeToTaskRequest,
                                   context: ServerCallContext) -> AsyncGenerator[Event]:
        task = await self._owned(params.id, caller_of(context))
        if task is not None and task.terminal:
            raise UnsupportedOperationError(message=f"task {task.id} is already {task.state}: get it instead")
        yield await self._shown(task) if task is not None else submitted(params.id, params.id)
        async for event in self._changes(params.id, after=task):
            yield event

    # --- not offered --------------------------------------------------------------------------
    async def on_list_tasks(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        raise UnsupportedOperationError(message="listing tasks is not offered: get each by its id")

    async def on_create_task_push_notification_config(self, params: TaskPushNotificationConfig,
                                                      context: ServerCallContext) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(self, params: GetTaskPushNotificationConfigRequest,
                                                   context: ServerCallContext) -> TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
            self, params: ListTaskPushNotificationConfigsRequest,
            context: ServerCallContext) -> ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(self, params: DeleteTaskPushNotificationConfigRequest,
                                                      context: ServerCallContext) -> None:
        raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(self, params: GetExtendedAgentCardRequest,
                                         context: ServerCallContext) -> AgentCard:
        raise UnsupportedOperationError(message="there is no extended agent card: the public one is complete")
