"""The MCP tool calls each app session is running now, so a request the app sends back during a
call (`elicitation/create`, `sampling/createMessage`) and its `notifications/progress` find the
call — and through it the run, agent and user — that caused them.

Progress names its call by the `progressToken` the gateway puts in each call's `_meta`. A server
request carries no such link on the wire (over stdio the SDK's `related_request_id` never leaves
the app; over Streamable HTTP it only picks the response stream), so it belongs to the session's
one call in flight; with several in flight it belongs to the one whose token the app echoes in
the request's `_meta.progressToken`, else to nobody (the request is declined, saying why: asking
the wrong user would be worse than asking none).
"""

from __future__ import annotations

import itertools
import secrets
import time
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from services.mcp_gateway.calls.caller import Caller
from shared.clock import now_iso
from shared.contracts.toolcall import ToolCallContext, ToolProgress

SessionKey = tuple[str, str]
MAX_PROGRESS = 50  # progress notes kept per call: the first ones and the latest


@dataclass
class CallInFlight:
    token: str
    tool: str
    call_id: str | None
    context: ToolCallContext
    deadline: float  # time.monotonic() after which the call has timed out
    progress: list[ToolProgress] = field(default_factory=list)
    caller: Caller | None = None  # who made the call: what the app asks during it is audited as theirs

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def progressed(self, params: Mapping[str, Any]) -> None:
        note = ToolProgress(progress=_number(params.get("progress")), total=_number(params.get("total")),
                            message=str(params["message"])[:500] if params.get("message") else None, at=now_iso())
        if len(self.progress) >= MAX_PROGRESS:
            del self.progress[MAX_PROGRESS // 2]  # keep how it began and how it went on lately
        self.progress.append(note)


class CallsInFlight:
    def __init__(self) -> None:
        self._by_session: dict[SessionKey, dict[str, CallInFlight]] = {}
        # A call's progress token: unique among this gateway's calls, and unguessable by an app
        # that never saw one; numbered after a random prefix, so no random bytes are read per call.
        self._token_prefix = f"aurora-call-{secrets.token_hex(8)}-"
        self._serial = itertools.count(1)

    def running(self, key: SessionKey, tool: str, context: ToolCallContext, *, call_id: str | None,
                timeout: float, caller: Caller | None = None) -> AbstractContextManager[CallInFlight]:
        """The call, known as running on session `key` while the `with` block lasts."""
        call = CallInFlight(token=f"{self._token_prefix}{next(self._serial)}", tool=tool, call_id=call_id,
                            context=context, deadline=time.monotonic() + timeout, caller=caller)
        return _Running(self._by_session, key, call)

    def caller(self, key: SessionKey, meta: Mapping[str, Any] | None, *,
               token: str | None = None) -> CallInFlight | str:
        """The call a server request on session `key` came from, or why none can be named.
        `token`: the call's own, when the gateway knows it (a stateless app asks in the call's
        result), which no `_meta` of the app's overrides."""
        calls = self._by_session.get(key) or {}
        if token is not None:
            return calls.get(token) or "the call that asked is no longer running"
        token = (meta or {}).get("progressToken")
        if isinstance(token, str) and token in calls:
            return calls[token]
        if not calls:
            return "the app asked outside any tool call"
        if len(calls) > 1:
            return (f"{len(calls)} calls are in flight on this app and the request names none of them "
                    "(echo the call's _meta.progressToken in the request's _meta)")
        return next(iter(calls.values()))

    def progressed(self, key: SessionKey, params: Mapping[str, Any] | None) -> bool:
        """A `notifications/progress` for one of the calls in flight: noted (True), or not ours."""
        token = (params or {}).get("progressToken")
        call = (self._by_session.get(key) or {}).get(token) if isinstance(token, str) else None
        if call is None or params is None:
            return False
        call.progressed(params)
        return True


class _Running(AbstractContextManager[CallInFlight]):
    """A class, not a generator context manager: every tool call passes one on its path."""

    __slots__ = ("_by_session", "_call", "_key")

    def __init__(self, by_session: dict[SessionKey, dict[str, CallInFlight]], key: SessionKey,
                 call: CallInFlight) -> None:
        self._by_session, self._key, self._call = by_session, key, call

    def __enter__(self) -> CallInFlight:
        self._by_session.setdefault(self._key, {})[self._call.token] = self._call
        return self._call

    def __exit__(self, *exc: object) -> None:
        calls = self._by_session.get(self._key)
        if calls is not None:
            calls.pop(self._call.token, None)
            if not calls:
                del self._by_session[self._key]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
