"""An app's request to the external client during that client's call, relayed by the gateway on
`<p>.edge.ask.<task id>` (`shared.contracts.edge_ask`): asked of the MCP client within the open
tool call, on that call's own response stream (`backchannel`).

Only a 2025-11-25 client that declared the capability in `initialize` is asked; a 2026-07-28
(stateless) client would be asked through an `InputRequiredResult`, which the edge does not
offer yet: both are declined with a reason the app sees. The client's answer, its error, or its
silence until the call's time is up goes back to the gateway, which audits it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import msgspec
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from pydantic import BaseModel, ValidationError

from services.mcp_edge.gate import Caller
from shared.contracts import edge_ask as contract
from shared.contracts.subjects import Subjects
from shared.nats import write_through
from shared.nats.request_guard import refusing_deliveries
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_edge.asks")
CAPABILITY = {"elicitation/create": "elicitation", "sampling/createMessage": "sampling"}


def refusal(caller: Caller, ask: contract.EdgeAsk) -> contract.EdgeAskError | None:
    """Why this client cannot be asked (None: it can)."""
    if caller.session_id is None:
        return contract.EdgeAskError(code="stateless_client", message=(
            f"{ask.method} is not relayed to a stateless (2026-07-28) MCP client yet"))
    capability = CAPABILITY[ask.method]
    if capability not in caller.capabilities:
        return contract.EdgeAskError(code="no_capability", message=(
            f"the MCP client did not declare the {capability} capability"))
    return None


class ClientAsks:
    def __init__(self, nc: NATS, subjects: Subjects) -> None:
        self._nc = nc
        self._subjects = subjects

    @contextlib.asynccontextmanager
    async def listening(self, task_id: str, caller: Caller, ctx: ServerRequestContext[Any]) -> AsyncIterator[None]:
        """While the call of `task_id` is open, the gateway's requests for it are asked of `ctx`'s client."""
        asking: set[asyncio.Task[None]] = set()

        async def heard(msg: Msg) -> None:
            # nats-py runs one callback at a time per subscription: a request waits in its own task
            task = asyncio.create_task(self._answer(msg, caller, ctx), name="edge-ask")
            asking.add(task)
            task.add_done_callback(asking.discard)

        subject = self._subjects.edge_ask(task_id)
        # only the gateway may publish there; a stream delivery is no app's request
        sub = await self._nc.subscribe(subject, cb=refusing_deliveries(subject, heard))
        await write_through.flush(self._nc)  # subscribed before the call can ask
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()
            for task in list(asking):
                task.cancel()

    async def _answer(self, msg: Msg, caller: Caller, ctx: ServerRequestContext[Any]) -> None:
        try:
            ask = contract.decode_ask(msg.data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            answer = contract.EdgeAnswer(error=contract.EdgeAskError(code="bad_request", message=str(exc)))
        else:
            problem = refusal(caller, ask)
            answer = contract.EdgeAnswer(error=problem) if problem else await self._ask(ask, ctx)
            log.info("client asked", method=ask.method, app=ask.app, token=caller.token_id,
                     session=caller.session_id, outcome=answer.error.code if answer.error else "answered")
        await msg.respond(contract.encode(answer))

    async def _ask(self, ask: contract.EdgeAsk, ctx: ServerRequestContext[Any]) -> contract.EdgeAnswer:
        request: types.ElicitRequest | types.CreateMessageRequest
        result_type: type[BaseModel]
        try:
            if ask.method == "elicitation/create":
                request = types.ElicitRequest.model_validate({"method": ask.method, "params": ask.params})
                result_type = types.ElicitResult
            else:
                request = types.CreateMessageRequest.model_validate({"method": ask.method, "params": ask.params})
                result_type = types.CreateMessageResult
        except ValidationError as exc:
            return _error("bad_request", f"the app's {ask.method} is not valid: {exc}")
        try:
            result = await ctx.session.send_request(
                request, result_type, request_read_timeout_seconds=ask.timeout_seconds,
                metadata=ServerMessageMetadata(related_request_id=ctx.request_id))
        except NoBackChannelError:
            return _error("no_back_channel", "this call's connection cannot carry a request to the MCP client")
        except MCPError as exc:
            if exc.error.code == types.REQUEST_TIMEOUT:
                return _error("client_timeout", f"the MCP client did not answer within {ask.timeout_seconds:g}s")
            return _error("client_error", f"the MCP client answered with an error: {exc.error.message}")
        except TimeoutError:
            return _error("client_timeout", f"the MCP client did not answer within {ask.timeout_seconds:g}s")
        except ValidationError as exc:
            return _error("bad_client_answer", f"the MCP client's answer does not fit {ask.method}: {exc}")
        return contract.EdgeAnswer(result=result.model_dump(by_alias=True, mode="json", exclude_none=True))


def _error(code: str, message: str) -> contract.EdgeAnswer:
    return contract.EdgeAnswer(error=contract.EdgeAskError(code=code, message=message))
