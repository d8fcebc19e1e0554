"""Tool calls written on the wire as a runner or an operator sends them, for tests that reach the
gateway without a runner in between."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
from nats.aio.client import Client as NATS

from shared.contracts.envelope import Header, Source
from shared.contracts.subjects import Subjects
from shared.contracts.toolcall import ToolCallContext, ToolCallEnvelope, ToolCallRequest, decode_result
from tests.harness.apps_config import ECHO

# A request stamped minutes ago: nothing about a call may depend on its envelope's clock.
LONG_AGO = (datetime.now(UTC) - timedelta(minutes=5)).isoformat()


def _request(tool: str, arguments: dict[str, Any], timestamp: str,
             context: ToolCallContext | None = None) -> bytes:
    return msgspec.json.encode(ToolCallEnvelope(
        header=Header(method="tools/call", message_id=str(uuid.uuid4()), timestamp=timestamp,
                      source=Source(app="tests")),
        payload=ToolCallRequest(tool=tool, arguments=arguments, context=context or ToolCallContext())))


async def operator_call(nc: NATS, subjects: Subjects, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """An operator's call (no agent, no approval); its structured result, which must be `ok`."""
    reply = decode_result((await nc.request(subjects.operator_tool_call,
                                            _request(tool, arguments, "2026-01-01T00:00:00+00:00"), timeout=20)).data)
    assert reply.payload.status == "ok", reply.payload
    structured = reply.payload.structured
    assert isinstance(structured, dict)
    return structured


async def echo_counter(nc: NATS, subjects: Subjects, key: str, *, increment: bool = False) -> int:
    """The echo app's counter `key` (read, or incremented first), by an operator call."""
    tool = "counter_increment" if increment else "counter_get"
    reply = decode_result((await nc.request(subjects.operator_tool_call,
                                            _request(f"{ECHO}.{tool}", {"key": key}, LONG_AGO), timeout=15)).data)
    assert reply.payload.status == "ok", reply.payload
    assert reply.payload.structured is not None
    return int(reply.payload.structured["count"])


async def crafted_call(nc: NATS, subjects: Subjects, *, agent: str | None, tool: str, arguments: dict[str, Any],
                       task_id: str, approval_id: str | None = None, delivery: dict[str, Any] | None = None) -> Any:
    """A call as a runner's step would make it (on the agents' subject), with whatever context a
    test crafts; the reply's payload."""
    context = ToolCallContext(agent=agent, run_id=task_id, task_id=task_id, step_id="crafted",
                              approval_id=approval_id, delivery=delivery)
    reply = await nc.request(subjects.tool_call, _request(tool, arguments, "2026-01-01T00:00:00+00:00", context),
                             timeout=20)
    return decode_result(reply.data).payload
