"""An app's request to its client during a call from an agent's MCP endpoint, relayed to that
client: the gateway asks the mcp-edge instance holding the call (`<p>.edge.ask.<task id>`,
`shared.contracts.edge_ask`), which asks its own MCP client within the open tool call.

An edge call has no event user to ask and no run's model to sample: its client is the one who
can answer, when it declared the capability (the edge checks, and declines saying why when not).
"""

from __future__ import annotations

from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from shared.contracts import edge_ask as contract
from shared.contracts.subjects import Subjects
from shared.contracts.toolcall import ToolCallContext
from shared.errors import SubjectError

REPLY_MARGIN = 2.0  # the edge's own answer (a timeout included) must reach us before ours runs out


def is_edge_call(ctx: ToolCallContext) -> bool:
    """A call on mcp-edge's subject: an agent, an `api` caller (the token) and no run (the
    gateway refuses anything else there, and requires a run on `amp.tool.call`)."""
    return (ctx.run_id is None and ctx.agent is not None and ctx.actor is not None and ctx.actor.kind == "api"
            and bool(ctx.task_id))


class EdgeRelay:
    def __init__(self, nc: NATS, subjects: Subjects) -> None:
        self._nc = nc
        self._subjects = subjects

    async def ask(self, ctx: ToolCallContext, method: contract.Method, params: dict[str, Any], *, app: str,
                  wait: float) -> contract.EdgeAnswer:
        """The client's answer, or an `EdgeAnswer.error` saying why there is none."""
        try:
            subject = self._subjects.edge_ask(ctx.task_id or "")
        except SubjectError as exc:
            return _refused("no_edge_call", f"the call's task id cannot name its edge call: {exc}")
        request = contract.EdgeAsk(method=method, params=params, timeout_seconds=wait, app=app)
        try:
            reply = await self._nc.request(subject, contract.encode(request), timeout=wait + REPLY_MARGIN)
            return contract.decode_answer(reply.data)
        except NoRespondersError:
            return _refused("edge_gone", "the MCP client's call is no longer open at any mcp-edge instance")
        except NatsTimeoutError:
            return _refused("client_timeout", f"the MCP client did not answer within {wait:g}s")
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            return _refused("bad_reply", f"mcp-edge's answer is unreadable: {exc}")


def _refused(code: str, message: str) -> contract.EdgeAnswer:
    return contract.EdgeAnswer(error=contract.EdgeAskError(code=code, message=message))
