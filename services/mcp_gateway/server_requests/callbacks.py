"""The gateway's answers to what an app sends back during a tool call: the SDK callbacks of each
app session (`elicitation/create`, `sampling/createMessage`) and its `notifications/progress`.

One `ServerRequests` serves every session; `for_session` gives the callbacks of one (bound to
its key, which is how the call in flight is found — see `calls_in_flight`).

It is the hinge of the gateway's one cycle: the sessions need these callbacks when they are
built, what answers them (`Elicitation`) asks its question through the tool-call handler
(`CallPipeline`: `event_reply` in the event's chat), and that handler calls through the sessions.
So it is built empty, handed to the sessions, and `bind`s its answerers once, in the wiring
(`services/mcp_gateway/wiring.py`), as soon as the handler exists: before anything starts.
A second `bind` is refused (`AlreadyBound`), and a question asked before the bind is answered
"not serving calls yet", never left hanging.

A stateless (2026-07-28) app asks inside the call's result instead (`input_required`); its
questions come to `input_request` with the token of the call they belong to, and are answered
by the same handlers: one set of rules for both generations. Roots are the one question the
gateway answers itself: it exposes no filesystem, so the list is empty.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types
from mcp.client.session import ClientRequestContext, ElicitationFnT, SamplingFnT

from services.mcp_gateway.calls.in_flight import CallsInFlight, SessionKey
from shared.errors import AuroraError
from shared.observability.logs import get_logger

log = get_logger("aurora.mcp_gateway.server_requests")
NOT_SERVING_YET = "the gateway is not serving calls yet"


class AlreadyBound(AuroraError):
    """The server requests' answerers were bound a second time (the wiring binds them once)."""

    def __init__(self) -> None:
        super().__init__("the server requests' answerers are bound once, in the wiring")


class Elicits(Protocol):
    async def elicit(self, key: SessionKey, app_name: str, params: types.ElicitRequestParams, *,
                     call_token: str | None = None) -> types.ElicitResult: ...


class Samples(Protocol):
    async def sample(self, key: SessionKey, app_name: str, params: types.CreateMessageRequestParams, *,
                     call_token: str | None = None) -> types.CreateMessageResult | types.ErrorData: ...


# (the progress token of the call the question came in, the question) -> the answer, or why not
InputRequestFn = Callable[[str | None, types.InputRequest], Awaitable[types.InputResponse | types.ErrorData]]


@dataclass(frozen=True)
class SessionCallbacks:
    elicitation: ElicitationFnT | None
    sampling: SamplingFnT | None
    notified: Callable[[str, dict[str, Any] | None], None]
    input_request: InputRequestFn
    # A progress note read off the relay before the call's answer (transports/direct.py): True
    # when it was for one of the session's calls in flight, and is noted.
    progressed: Callable[[dict[str, Any] | None], bool]


class ServerRequests:
    """Built empty; `bind` once (see the module's docstring). `elicitation` / `sampling`: whether
    the sessions offer the capability at all."""

    def __init__(self, calls: CallsInFlight, *, elicitation: bool = True, sampling: bool = True) -> None:
        self.calls = calls
        self._offers = (elicitation, sampling)
        self._elicitation: Elicits | None = None
        self._sampling: Samples | None = None

    @property
    def bound(self) -> bool:
        return self._elicitation is not None

    def bind(self, *, elicitation: Elicits, sampling: Samples) -> None:
        """What answers the sessions' questions, from now on; once."""
        if self.bound:
            raise AlreadyBound()
        self._elicitation, self._sampling = elicitation, sampling

    def for_session(self, key: SessionKey, app_name: str) -> SessionCallbacks:
        """`call_token` below: the call the question belongs to when the gateway knows it (a
        stateless app's questions come in the call's result); None: `calls_in_flight` finds it."""
        async def elicit(params: types.ElicitRequestParams,
                         call_token: str | None) -> types.ElicitResult | types.ErrorData:
            elicits = self._elicitation
            if not self._offers[0]:
                return types.ErrorData(code=types.INVALID_REQUEST, message="this gateway does not elicit")
            if elicits is None:
                return types.ErrorData(code=types.INTERNAL_ERROR, message=NOT_SERVING_YET)
            try:
                return await elicits.elicit(key, app_name, params, call_token=call_token)
            except Exception as exc:  # the app gets an error, never a hung request
                log.exception("an elicitation failed", app=app_name)
                return types.ErrorData(code=types.INTERNAL_ERROR, message=f"the gateway failed to ask: {exc}")

        async def sample(params: types.CreateMessageRequestParams, call_token: str | None) -> (
                types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData):
            samples = self._sampling
            if not self._offers[1]:
                return types.ErrorData(code=types.INVALID_REQUEST, message="this gateway does not sample")
            if samples is None:
                return types.ErrorData(code=types.INTERNAL_ERROR, message=NOT_SERVING_YET)
            try:
                return await samples.sample(key, app_name, params, call_token=call_token)
            except Exception as exc:
                log.exception("a sampling request failed", app=app_name)
                return types.ErrorData(code=types.INTERNAL_ERROR, message=f"the gateway failed to sample: {exc}")

        async def elicitation(context: ClientRequestContext,
                              params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
            return await elicit(params, None)

        async def sampling(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> (
                types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData):
            return await sample(params, None)

        async def input_request(call_token: str | None,
                                request: types.InputRequest) -> types.InputResponse | types.ErrorData:
            if isinstance(request, types.ElicitRequest):
                return await elicit(request.params, call_token)
            if isinstance(request, types.CreateMessageRequest):
                return await sample(request.params, call_token)
            return types.ListRootsResult(roots=[])

        def notified(method: str, params: dict[str, Any] | None) -> None:
            if method == "notifications/progress":
                self.calls.progressed(key, params)

        return SessionCallbacks(elicitation=elicitation if self._offers[0] else None,
                                sampling=sampling if self._offers[1] else None, notified=notified,
                                input_request=input_request,
                                progressed=lambda params: self.calls.progressed(key, params))
