"""The input-required loop of a call to a stateless app (`input_required`), and how its questions
reach the gateway's handlers (`server_requests`): pure logic, driven by plain async functions in
place of the app (the whole path against a real app is in tests/integration/elicit)."""

from __future__ import annotations

import asyncio
import time

import mcp_types as types
import pytest

from services.mcp_gateway.calls.in_flight import CallsInFlight, SessionKey
from services.mcp_gateway.server_requests.callbacks import ServerRequests
from services.mcp_gateway.server_requests.input_required import InputDeclined, Retry, TooManyRounds, answer_all, drive
from shared.contracts.toolcall import ToolCallContext

FORM = types.ElicitRequest(params=types.ElicitRequestFormParams(
    message="your name?", requested_schema={"type": "object", "properties": {"name": {"type": "string"}}}))
SAMPLE = types.CreateMessageRequest(params=types.CreateMessageRequestParams(
    messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))], max_tokens=5))
ACCEPTED = types.ElicitResult(action="accept", content={"name": "Ada"})
DONE = types.CallToolResult(content=[types.TextContent(type="text", text="done")])


def asking(*rounds: types.InputRequiredResult, then: types.CallToolResult = DONE) -> tuple[
        list[tuple[types.InputResponses | None, str | None, float]], Retry]:
    """A retry that answers with `rounds` in turn, then `then`; and what it was called with."""
    seen: list[tuple[types.InputResponses | None, str | None, float]] = []
    left = list(rounds)

    async def retry(responses: types.InputResponses | None, state: str | None,
                    remaining: float) -> types.CallToolResult | types.InputRequiredResult:
        seen.append((responses, state, remaining))
        return left.pop(0) if left else then
    return seen, retry


async def accept(request: types.InputRequest) -> types.InputResponse | types.ErrorData:
    return ACCEPTED


async def test_each_round_is_answered_and_its_state_echoed_until_the_result() -> None:
    seen, retry = asking(types.InputRequiredResult(input_requests={"name": FORM}, request_state="s2"),
                         types.InputRequiredResult(request_state="s3"))  # only state: asked again, empty
    first = types.InputRequiredResult(input_requests={"name": FORM}, request_state="s1")
    result = await drive(first, answer=accept, retry=retry, deadline=time.monotonic() + 10)
    assert result is DONE
    assert [(r, s) for r, s, _ in seen] == [({"name": ACCEPTED}, "s1"), ({"name": ACCEPTED}, "s2"), (None, "s3")]
    assert all(0 < remaining <= 10 for _, _, remaining in seen)


async def test_an_app_that_keeps_asking_is_stopped() -> None:
    again = types.InputRequiredResult(input_requests={"name": FORM})
    seen, retry = asking(*[again] * 5)
    with pytest.raises(TooManyRounds, match="more than 3 times"):
        await drive(again, answer=accept, retry=retry, deadline=time.monotonic() + 10, max_rounds=3)
    assert len(seen) == 3


async def test_the_calls_timeout_spans_every_round() -> None:
    async def slow(request: types.InputRequest) -> types.InputResponse | types.ErrorData:
        await asyncio.sleep(0.3)
        return ACCEPTED

    again = types.InputRequiredResult(input_requests={"name": FORM})
    seen, retry = asking(*[again] * 5)
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await drive(again, answer=slow, retry=retry, deadline=started + 0.5)
    assert time.monotonic() - started < 1.0
    [(_, _, remaining)] = seen  # one retry, given only what was left of the call
    assert remaining < 0.25


async def test_a_declined_question_ends_the_round_and_stops_the_others() -> None:
    stopped = asyncio.Event()

    async def answer(request: types.InputRequest) -> types.InputResponse | types.ErrorData:
        if isinstance(request, types.CreateMessageRequest):
            return types.ErrorData(code=types.INVALID_REQUEST, message="no_model: a playbook agent")
        try:
            await asyncio.Event().wait()  # the user never answers
        finally:
            stopped.set()
        raise AssertionError("unreachable")

    with pytest.raises(InputDeclined) as raised:
        await asyncio.wait_for(answer_all({"name": FORM, "summary": SAMPLE}, answer), timeout=5)
    assert str(raised.value) == ("the gateway declined the app's sampling/createMessage (summary): "
                                 "no_model: a playbook agent")
    assert stopped.is_set()


class Recorded:
    """An Elicits that says which call it was asked for."""

    def __init__(self, calls: CallsInFlight) -> None:
        self.calls = calls

    async def elicit(self, key: SessionKey, app_name: str, params: types.ElicitRequestParams, *,
                     call_token: str | None = None) -> types.ElicitResult:
        call = self.calls.caller(key, params.meta, token=call_token)
        return types.ElicitResult(action="decline", _meta={"call": call if isinstance(call, str) else call.call_id})


class NeverAsked:
    """A Samples for sessions that do not offer sampling: never asked."""

    async def sample(self, key: SessionKey, app_name: str, params: types.CreateMessageRequestParams, *,
                     call_token: str | None = None) -> types.CreateMessageResult | types.ErrorData:
        raise AssertionError("sampling is not offered")


async def test_a_stateless_apps_questions_reach_the_call_they_came_in() -> None:
    calls = CallsInFlight()
    key = ("test.elicit", "default")
    requests = ServerRequests(calls, sampling=False)
    requests.bind(elicitation=Recorded(calls), sampling=NeverAsked())
    callbacks = requests.for_session(key, "test.elicit")
    with (calls.running(key, "book", ToolCallContext(run_id="r1"), call_id="c1", timeout=5) as first,
          calls.running(key, "book", ToolCallContext(run_id="r2"), call_id="c2", timeout=5)):
        answered = await callbacks.input_request(first.token, FORM)  # two in flight: the token names it
        assert isinstance(answered, types.ElicitResult) and answered.meta == {"call": "c1"}, answered
    ended = await callbacks.input_request(first.token, FORM)
    assert isinstance(ended, types.ElicitResult)
    assert ended.meta == {"call": "the call that asked is no longer running"}, ended
    roots = await callbacks.input_request(first.token, types.ListRootsRequest())
    assert roots == types.ListRootsResult(roots=[])  # the gateway exposes no filesystem
    refused = await callbacks.input_request(first.token, SAMPLE)  # the sessions offer no sampling
    assert isinstance(refused, types.ErrorData) and refused.message == "this gateway does not sample"
