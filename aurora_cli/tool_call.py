"""`aurora tools call`: an operator's (or a person's) call through the gateway, and the approval
it may wait for.

The gateway holds a call that a policy covers, or a `dangerous` tool's call, until approvers
grant it (`needs_approval`, with the approval's id), as it holds an agent's. The approval is
bound to the tool, the arguments and the call's task id, which this command makes up once
(`cli-<random>`) and sends again with the approval: `--wait` polls `approvals.get` until the
decision, then asks again presenting it; without `--wait` it prints the command that does so.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

import msgspec
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeoutError

from aurora_cli.output import CliError, connected
from shared.clock import now_iso
from shared.config.settings import Settings
from shared.contracts.envelope import Header, Source
from shared.contracts.toolcall import METHOD_CALL, ToolCallContext, ToolCallEnvelope, ToolCallRequest, decode_result
from shared.nats.admin_service import AdminRequestError, admin_request

DECIDED = ("granted", "denied", "expired", "consumed")


def new_task_id() -> str:
    """The call's own task: the approval is bound to it, so the call presenting it repeats it."""
    return f"cli-{uuid.uuid4().hex[:16]}"


async def call_tool(settings: Settings, name: str, arguments: dict[str, Any], timeout: float, *,
                    task_id: str, approval_id: str | None = None, wait_seconds: float | None = None,
                    poll_seconds: float = 1.0, report: Callable[[str], None] = lambda line: None) -> dict[str, Any]:
    """The call's result. With `wait_seconds`, a call that needs an approval waits that long for
    its decision (`report` hears each change), and once granted is asked again presenting it."""
    async with connected(settings.nats) as nc:
        result = await _call(nc, settings, name, arguments, timeout, task_id, approval_id)
        if result["status"] != "needs_approval" or wait_seconds is None:
            return result
        held = str(result["approval_id"])
        decided = await _decision(nc, settings, held, wait_seconds, poll_seconds, report)
        if decided is None or decided["state"] != "granted":
            return result if decided is None else {**result, "status": "denied", "error": {
                "code": f"approval_{decided['state']}",
                "message": f"approval {held} is {decided['state']}" + (
                    f" by {decided['decided_by']}" if decided.get("decided_by") else "")}}
        report(f"approval {held} granted; calling {name} again with it")
        return await _call(nc, settings, name, arguments, timeout, task_id, held)


async def _call(nc: NATS, settings: Settings, name: str, arguments: dict[str, Any], timeout: float,
                task_id: str, approval_id: str | None) -> dict[str, Any]:
    envelope = ToolCallEnvelope(
        header=Header(method=METHOD_CALL, message_id=str(uuid.uuid4()), timestamp=now_iso(),
                      source=Source(app="aurora.cli")),
        payload=ToolCallRequest(tool=name, arguments=arguments, timeout_seconds=timeout,
                                context=ToolCallContext(task_id=task_id, approval_id=approval_id)),
    )
    subject = settings.subjects.requested(settings.subjects.operator_tool_call)
    try:
        reply = await nc.request(subject, msgspec.json.encode(envelope), timeout=timeout + 5)
    except NoRespondersError as exc:
        raise CliError(f"no mcp-gateway is running (nobody answers {subject})") from exc
    except NatsTimeoutError as exc:
        raise CliError(f"the gateway did not answer within {timeout + 5:g}s") from exc
    result: dict[str, Any] = msgspec.to_builtins(decode_result(reply.data).payload)
    return result


async def _decision(nc: NATS, settings: Settings, approval_id: str, wait_seconds: float, poll_seconds: float,
                    report: Callable[[str], None]) -> dict[str, Any] | None:
    """The approval once decided; None when `wait_seconds` ran out first."""
    deadline = time.monotonic() + wait_seconds
    said = ""
    while True:
        try:
            approval: dict[str, Any] = await admin_request(nc, settings.subjects, "approvals", "get",
                                                           {"id": approval_id})
        except AdminRequestError as exc:
            raise CliError(f"cannot read approval {approval_id}: {exc}") from exc
        except (NoRespondersError, NatsTimeoutError, TimeoutError) as exc:
            raise CliError(f"the gateway did not answer for approval {approval_id}") from exc
        grants = [g["by"] for g in approval.get("grants") or []]
        news = f"approval {approval_id} is {approval['state']}" + (
            f" ({len(grants)} of {approval.get('required_grants', 1)} grants: {', '.join(grants)})" if grants else "")
        if news != said:
            report(news)
            said = news
        if approval["state"] in DECIDED:
            return approval
        if time.monotonic() + poll_seconds > deadline:
            return None
        await asyncio.sleep(poll_seconds)
