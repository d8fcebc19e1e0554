"""A tool call to a stateless (2026-07-28) app that asks back: the input-required loop.

A 2026-07-28 app cannot send the client a request during a call (there is no session to send it
on); it answers the call with an `InputRequiredResult` — the questions (`input_requests`:
elicitation, sampling, roots) and an opaque `request_state` — and the client calls again with
the answers and that state, as often as the app asks. The gateway answers each question with
the same handlers its handshake sessions' callbacks use (`server_requests`), so the user, the
model, the audit and the decline rules are the same in both generations.

The loop is the SDK's (`mcp.client._input_required`, which is private, so it is not imported),
with what a gateway needs besides: the call's own timeout spans every round (each retry gets
only what is left), the rounds are bounded, and a question the gateway will not answer ends
the call with a typed error naming the question and why — in this generation an app cannot
be told "no" to one question and carry on, since an answer has no error arm.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

import mcp_types as types
from mcp import ClientSession

from shared.errors import AuroraError

MAX_ROUNDS = 10  # the SDK's and the other SDKs' default: an app that keeps asking is broken
STATE_ONLY_DELAY = (0.05, 0.25)  # the backoff (first, cap) when a round asks nothing, only carries state

Answer = Callable[[types.InputRequest], Awaitable[types.InputResponse | types.ErrorData]]
Retry = Callable[[types.InputResponses | None, str | None, float],
                 Awaitable[types.CallToolResult | types.InputRequiredResult]]


class InputRequestsFailed(AuroraError):
    """The call did not finish: what the app asked for during it was not given."""


class InputDeclined(InputRequestsFailed):
    """The gateway would not answer one of the app's questions (the reason says why)."""


class TooManyRounds(InputRequestsFailed):
    """The app kept asking past `MAX_ROUNDS`."""


class UnknownResultType(AuroraError):
    """The app's final answer has a `resultType` the gateway does not know (it declares no extension
    that adds one): not a result; the call ends as a protocol error."""


async def call_tool(session: ClientSession, tool: str, arguments: dict[str, Any], *, timeout: float,
                    meta: dict[str, Any] | None, answer: Answer,
                    max_rounds: int = MAX_ROUNDS) -> types.CallToolResult:
    """`tools/call` on a stateless session, answering what the app asks until it returns its
    result. Every round carries the same `_meta` (the call's progress token and idempotency key:
    it is one call). Raises TimeoutError when `timeout` passes, InputRequestsFailed, or what the
    SDK's `call_tool` raises (MCPError, RuntimeError of the output-schema check)."""
    deadline = time.monotonic() + timeout

    async def retry(responses: types.InputResponses | None, state: str | None,
                    left: float) -> types.CallToolResult | types.InputRequiredResult:
        return await session.call_tool(tool, arguments, read_timeout_seconds=left, input_responses=responses,
                                       request_state=state, allow_input_required=True,
                                       meta=cast("types.RequestParamsMeta | None", meta))

    return await drive(await retry(None, None, timeout), answer=answer, retry=retry, deadline=deadline,
                       max_rounds=max_rounds)


async def drive(first: types.CallToolResult | types.InputRequiredResult, *, answer: Answer, retry: Retry,
                deadline: float, max_rounds: int = MAX_ROUNDS) -> types.CallToolResult:
    """The final result of a call whose first answer was `first` (`deadline`: time.monotonic())."""
    current = first
    rounds = 0
    delay = STATE_ONLY_DELAY[0]
    while isinstance(current, types.InputRequiredResult):
        rounds += 1
        if rounds > max_rounds:
            raise TooManyRounds(f"the app asked for input more than {max_rounds} times in one call")
        responses: types.InputResponses | None = None
        if current.input_requests:
            delay = STATE_ONLY_DELAY[0]
            responses = await answer_all(current.input_requests, answer)
        else:  # only state: the app is working on something; ask again shortly
            await asyncio.sleep(min(delay, max(deadline - time.monotonic(), 0)))
            delay = min(delay * 2, STATE_ONLY_DELAY[1])
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        current = await retry(responses, current.request_state, left)
    if current.result_type != "complete":  # the SDK lets it through; MCP says it is invalid
        raise UnknownResultType(f"the app answered with resultType {current.result_type!r}, which no extension "
                                "the gateway declared defines: MCP says such a result is invalid")
    return current


async def answer_all(requests: types.InputRequests, answer: Answer) -> types.InputResponses:
    """Every question answered at once (a form and a model's answer need not wait on each
    other); the first one declined ends the others."""
    tasks = {asyncio.ensure_future(answer(request)): key for key, request in requests.items()}
    responses: types.InputResponses = {}
    try:
        pending = set(tasks)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                key, result = tasks[task], task.result()
                if isinstance(result, types.ErrorData):
                    raise InputDeclined(f"the gateway declined the app's {requests[key].method} "
                                        f"({key}): {result.message}")
                responses[key] = result
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return responses
