"""`ServerRequests`, the hinge of the gateway's one cycle: built empty, bound once in the wiring.
Before the bind an app's question is answered "not serving calls yet" (never left hanging); a
second bind is refused."""

from __future__ import annotations

import mcp_types as types
import pytest

from services.mcp_gateway.calls.in_flight import CallsInFlight, SessionKey
from services.mcp_gateway.server_requests.callbacks import NOT_SERVING_YET, AlreadyBound, ServerRequests

FORM = types.ElicitRequest(params=types.ElicitRequestFormParams(
    message="Which day?", requested_schema={"type": "object", "properties": {"day": {"type": "string"}}}))
SAMPLE = types.CreateMessageRequest(params=types.CreateMessageRequestParams(
    messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))], max_tokens=10))


class Declines:
    """Answers every question: an elicitation declined, a sampling refused, each saying so."""

    async def elicit(self, key: SessionKey, app_name: str, params: types.ElicitRequestParams, *,
                     call_token: str | None = None) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    async def sample(self, key: SessionKey, app_name: str, params: types.CreateMessageRequestParams, *,
                     call_token: str | None = None) -> types.CreateMessageResult | types.ErrorData:
        return types.ErrorData(code=types.INVALID_REQUEST, message="sampled by the bound answerer")


async def test_before_the_bind_a_question_is_answered_not_serving_yet_and_after_it_by_the_answerers() -> None:
    requests = ServerRequests(CallsInFlight())
    callbacks = requests.for_session(("test.app", "default"), "test.app")  # the sessions get them unbound
    for question in (FORM, SAMPLE):
        early = await callbacks.input_request(None, question)
        assert isinstance(early, types.ErrorData) and early.message == NOT_SERVING_YET, early
    answerers = Declines()
    requests.bind(elicitation=answerers, sampling=answerers)
    assert await callbacks.input_request(None, FORM) == types.ElicitResult(action="decline")
    sampled = await callbacks.input_request(None, SAMPLE)
    assert isinstance(sampled, types.ErrorData) and sampled.message == "sampled by the bound answerer"


def test_a_second_bind_is_refused() -> None:
    requests = ServerRequests(CallsInFlight())
    requests.bind(elicitation=Declines(), sampling=Declines())
    with pytest.raises(AlreadyBound):
        requests.bind(elicitation=Declines(), sampling=Declines())
