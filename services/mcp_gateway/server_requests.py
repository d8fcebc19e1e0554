"""The gateway's answers to what an app sends back during a tool call: the SDK callbacks of each
app session (`elicitation/create`, `sampling/createMessage`) and its `notifications/progress`.

One `ServerRequests` serves every session; `for_session` gives the callbacks of one (bound to
its key, which is how the call in flight is found — see `calls_in_flight`). What answers them is
`attach`ed once the tool-call handler exists (the elicitation asks through it), which is before
any call is served: the sessions are opened earlier, and their capabilities are fixed then.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types
from mcp.client.session import ClientRequestContext, ElicitationFnT, SamplingFnT

from services.mcp_gateway.calls_in_flight import CallsInFlight, SessionKey
from shared.logs import get_logger

log = get_logger("aurora.mcp_gateway.server_requests")


class Elicits(Protocol):
    async def elicit(self, key: SessionKey, app_name: str,
                     params: types.ElicitRequestParams) -> types.ElicitResult: ...


class Samples(Protocol):
    async def sample(self, key: SessionKey, app_name: str,
                     params: types.CreateMessageRequestParams) -> types.CreateMessageResult | types.ErrorData: ...


@dataclass(frozen=True)
class SessionCallbacks:
    elicitation: ElicitationFnT | None
    sampling: SamplingFnT | None
    notified: Callable[[str, dict[str, Any] | None], None]


class ServerRequests:
    def __init__(self, calls: CallsInFlight, *, elicitation: bool = True, sampling: bool = True) -> None:
        self.calls = calls
        self._offers = (elicitation, sampling)
        self._elicitation: Elicits | None = None
        self._sampling: Samples | None = None

    def attach(self, *, elicitation: Elicits | None = None, sampling: Samples | None = None) -> None:
        self._elicitation = elicitation or self._elicitation
        self._sampling = sampling or self._sampling

    def for_session(self, key: SessionKey, app_name: str) -> SessionCallbacks:
        async def elicitation(context: ClientRequestContext,
                              params: types.ElicitRequestParams) -> types.ElicitResult | types.ErrorData:
            elicits = self._elicitation
            if elicits is None:
                return types.ErrorData(code=types.INTERNAL_ERROR, message="the gateway is not serving calls yet")
            try:
                return await elicits.elicit(key, app_name, params)
            except Exception as exc:  # the app gets an error, never a hung request
                log.exception("an elicitation failed", app=app_name)
                return types.ErrorData(code=types.INTERNAL_ERROR, message=f"the gateway failed to ask: {exc}")

        async def sampling(context: ClientRequestContext, params: types.CreateMessageRequestParams) -> (
                types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData):
            samples = self._sampling
            if samples is None:
                return types.ErrorData(code=types.INVALID_REQUEST, message="this gateway does not sample")
            try:
                return await samples.sample(key, app_name, params)
            except Exception as exc:
                log.exception("a sampling request failed", app=app_name)
                return types.ErrorData(code=types.INTERNAL_ERROR, message=f"the gateway failed to sample: {exc}")

        def notified(method: str, params: dict[str, Any] | None) -> None:
            if method == "notifications/progress":
                self.calls.progressed(key, params)

        return SessionCallbacks(elicitation=elicitation if self._offers[0] else None,
                                sampling=sampling if self._offers[1] else None, notified=notified)
