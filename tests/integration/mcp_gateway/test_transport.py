"""The MCP-over-NATS transport in this process against a real nats-server: one JSON-RPC message
per NATS message both ways, and closing it leaves the shared connection healthy."""

from __future__ import annotations

import asyncio
import json
from functools import partial

import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from services.mcp_gateway.transports.nats_stdio import nats_stdio_transport
from shared.contracts.subjects import Subjects
from tests.integration.mcp_gateway.helpers import poll

pytestmark = pytest.mark.timeout(30)


async def test_messages_travel_one_per_nats_message_and_closing_leaves_the_connection_usable(
    nc: NATS, subjects: Subjects
) -> None:
    sent: list[dict[str, object]] = []

    async def app_side(msg: Msg) -> None:  # what the supervisor would write to the app's stdin
        sent.append(json.loads(msg.data))

    await nc.subscribe(subjects.mcp("test.t", "default", "c2s"), cb=app_side)
    for round_ in range(3):
        async with nats_stdio_transport(nc, subjects, "test.t", "default") as (read, write):
            request = types.JSONRPCRequest(jsonrpc="2.0", id=round_, method="ping")
            await write.send(SessionMessage(request))
            await nc.publish(subjects.mcp("test.t", "default", "s2c"),
                             b'{"jsonrpc":"2.0","method":"notifications/acme/ping","params":{"n":1.0}}')
            received = await asyncio.wait_for(read.receive(), 2)
            assert isinstance(received, SessionMessage)
            assert isinstance(received.message, types.JSONRPCNotification)
            assert received.message.method == "notifications/acme/ping"
            assert received.message.params == {"n": 1.0}
            await poll(partial(_has, sent, round_ + 1), what=f"request {round_} on c2s")
        assert sent[-1] == {"jsonrpc": "2.0", "id": round_, "method": "ping"}

    # A cancelled flush inside the transport used to kill nats-py's read loop: requests on the
    # same connection then timed out for good.
    async def echo(msg: Msg) -> None:
        await msg.respond(msg.data)

    await nc.subscribe("test.probe", cb=echo)
    for _ in range(3):
        assert (await nc.request("test.probe", b"still reading", timeout=2)).data == b"still reading"


async def _has(items: list[dict[str, object]], count: int) -> bool:
    return len(items) == count
