"""Tool calls through the gateway (`amp.tool.call`), the only way a runner reaches a tool.

Whatever happens on the wire becomes a `ToolCallResult`: no gateway listening to the first
request is `unavailable` (nothing was executed). An answer that is lost — no reply in time, the
gateway gone after the call may have reached it, or the gateway saying the call is still
executing (`call_in_progress`) — is asked for again under the same call id, a bounded number of
times with backoff: the gateway's call ledger answers with the recorded result, runs a call it
never received, or says the call is in doubt (`services.mcp_gateway.calls.ledger`). Only when every
ask is lost is the answer `timeout` for a read and `outcome_unknown` for anything else.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

import msgspec
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from shared.clock import now_iso
from shared.contracts.envelope import Header, Source, Trace
from shared.contracts.signals import RUNNER_APP
from shared.contracts.toolcall import (
    METHOD_CALL,
    ToolCallEnvelope,
    ToolCallRequest,
    ToolCallResult,
    ToolError,
    decode_result,
    encode,
)
from shared.ids import uuid5_text

_CALL_NAMESPACE = uuid.UUID("5d1c9f0e-7b2a-4e61-9c3d-8a4f2e6b1d07")
# The gateway answers within the call's timeout; this much more is allowed for the wire.
REPLY_MARGIN = 5.0
IN_PROGRESS = "call_in_progress"  # the gateway's ledger: the call is still executing, ask again


@dataclass(frozen=True)
class Reask:
    """How often, and how patiently, a lost answer is asked for again (under the same call id).
    The default rides out a gateway restart: its heartbeat goes stale within a few seconds."""

    attempts: int = 6
    first_delay: float = 0.5
    max_delay: float = 4.0
    # No new ask after this many times the first ask's own wait: a gateway that takes every ask
    # and answers none is not waited for without end.
    patience: float = 3.0

    def delays(self) -> Iterator[float]:
        delay = self.first_delay
        for _ in range(self.attempts):
            yield delay
            delay = min(delay * 2, self.max_delay)


class _Lost:
    """No answer to one ask: why, and whether the gateway may have received the call."""

    def __init__(self, code: str, received: bool) -> None:
        self.code = code
        self.received = received


def call_id_for(task_id: str, step_id: str, attempt: int) -> str:
    """The envelope id of a step's call: the gateway audits the call under it."""
    return uuid5_text(_CALL_NAMESPACE, f"{task_id}\n{step_id}\n{attempt}")


def step_call_id(task_id: str, step_id: str, attempt: int, *, first: bool, side_effect: str) -> str:
    """The call id of a step's call. A write's first call (`first`: nothing of the step recorded
    before) has the same id in every attempt, so a resumed attempt that makes it again is asked
    under the id the gateway's call ledger knows it by: nothing recorded, it was never sent (the
    ledger's claim precedes the send) and runs; recorded, the ledger answers and nothing is sent
    twice. A call made again after a recorded outcome (an approval arrived, the target was
    unavailable, a read-back found no trace) is a new call: the attempt is in its id. So is every
    read's: a read repeated is another call, audited on its own (the audit keeps one record per
    call id)."""
    return call_id_for(task_id, step_id, 0 if first and side_effect != "read" else attempt)


class ToolClient(Protocol):
    async def call(self, request: ToolCallRequest, *, call_id: str, timeout: float,
                   side_effect: str | None, trace: Trace | None = None) -> ToolCallResult: ...


class NatsToolClient:
    def __init__(self, nc: NATS, subject: str, *, instance: str, reask: Reask | None = None) -> None:
        self._nc = nc
        self._subject = subject
        self._source = Source(app=RUNNER_APP, instance=instance[:64] or "default")
        self._reask = reask or Reask()

    async def call(self, request: ToolCallRequest, *, call_id: str, timeout: float,
                   side_effect: str | None, trace: Trace | None = None) -> ToolCallResult:
        """`trace`: the event's, so the call (and the `tool.*` event it causes) stays in its trace."""
        envelope = ToolCallEnvelope(
            header=Header(method=METHOD_CALL, message_id=call_id, timestamp=now_iso(), source=self._source,
                          trace=trace),
            payload=msgspec.structs.replace(request, timeout_seconds=timeout),
        )
        answer = await self._ask(envelope, timeout, side_effect)
        if isinstance(answer, _Lost) and not answer.received:  # nobody listened: nothing ran
            return _failed("unavailable", "no_gateway", "no mcp-gateway answers tool calls", side_effect)
        asked = 1
        give_up = time.monotonic() + self._reask.patience * (timeout + REPLY_MARGIN)
        for delay in self._reask.delays():
            if time.monotonic() + delay > give_up:
                break
            # Asked again, `unavailable` says nothing ran this time (the gateway is back but the
            # app's session is not yet): the call is still to be had, so ask again.
            if not _lost(answer) and not (asked > 1 and _unavailable(answer)):
                break
            await asyncio.sleep(delay)
            answer = await self._ask(envelope, timeout, side_effect)
            asked += 1
        if isinstance(answer, ToolCallResult) and not (asked > 1 and _unavailable(answer)):
            return answer  # an answer, or `call_in_progress` still after every ask
        # The first answer was lost, so the call may have run whatever the last ask heard.
        last = answer.code if isinstance(answer, _Lost) else answer.error.code if answer.error else answer.status
        detail = f"no answer from the gateway to {asked} asks (the last: {last})"
        if side_effect == "read":
            return _failed("timeout", "no_reply", f"{detail} within {timeout:g}s each", side_effect)
        return _failed("outcome_unknown", "no_reply", f"{detail}; the call may have run", side_effect)

    async def _ask(self, envelope: ToolCallEnvelope, timeout: float, side_effect: str | None) -> ToolCallResult | _Lost:
        try:
            reply = await self._nc.request(self._subject, encode(envelope), timeout=timeout + REPLY_MARGIN)
        except NoRespondersError:
            return _Lost("no_gateway", received=False)
        except (NatsTimeoutError, TimeoutError):
            return _Lost("no_reply", received=True)
        try:
            return decode_result(reply.data).payload
        except (msgspec.ValidationError, msgspec.DecodeError) as exc:
            status = "tool_error" if side_effect == "read" else "outcome_unknown"
            return _failed(status, "bad_reply", f"the gateway's reply is malformed: {exc}", side_effect)


def _unavailable(answer: ToolCallResult | _Lost) -> bool:
    return isinstance(answer, ToolCallResult) and answer.status == "unavailable"


def _lost(answer: ToolCallResult | _Lost) -> bool:
    """Worth asking again: no answer, or the gateway says the call is still executing."""
    return isinstance(answer, _Lost) or (answer.error is not None and answer.error.code == IN_PROGRESS)


def _failed(status: str, code: str, message: str, side_effect: str | None) -> ToolCallResult:
    return ToolCallResult(
        status=status,  # type: ignore[arg-type]
        error=ToolError(code=code, message=message),
        side_effect=side_effect if side_effect in ("read", "write", "dangerous") else None,  # type: ignore[arg-type]
    )
