"""The relay's messages from an app (transports/nats_stdio.py, `_FromApp`): an answer to a direct
call is taken at once, unless messages for the session are still in hand (then it waits behind
them, in order); a session that reads slower than the app writes has the overflow dropped and
counted, never an unbounded backlog."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
from mcp.shared.message import SessionMessage
from nats.aio.msg import Msg

from services.mcp_gateway.transports import nats_stdio
from services.mcp_gateway.transports.direct import DirectCalls
from services.mcp_gateway.transports.nats_stdio import _FromApp, relaying_streak


async def _nothing(_: bytes, __: str | None, ___: float | None) -> None:
    return None


def message(body: dict[str, Any]) -> Msg:
    return Msg(None, subject="amp.mcp.app.main.s2c", data=json.dumps({"jsonrpc": "2.0", **body}).encode())  # type: ignore[arg-type]


NOTE = {"method": "notifications/message", "params": {"level": "info", "data": "hello"}}


async def test_an_answer_is_taken_at_once_when_nothing_waits_and_behind_what_waits_otherwise() -> None:
    direct = DirectCalls(_nothing)
    writer, reader = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    from_app = _FromApp(direct, writer, "app", "main", relaying_streak("app", "main"))
    first, answered_first = await direct.send("tools/call", {"name": "echo"})
    from_app.on_message(message({"id": first, "result": {"content": []}}))
    assert answered_first.done()  # in the read loop: no task in between

    second, answered_second = await direct.send("tools/call", {"name": "echo"})
    from_app.on_message(message(NOTE))  # for the session: through the task
    from_app.on_message(message({"id": second, "result": {"content": []}}))
    assert not answered_second.done()  # behind the note, which the session has not been given yet
    read = await asyncio.wait_for(reader.receive(), 5)
    assert isinstance(read, SessionMessage) and read.message.method == "notifications/message"  # type: ignore[union-attr]
    await asyncio.wait_for(answered_second, 5)
    from_app.close()
    writer.close()
    reader.close()


async def test_a_session_reading_slower_than_the_app_writes_has_the_overflow_dropped_and_counted(
        monkeypatch: Any) -> None:
    monkeypatch.setattr(nats_stdio, "RELAY_BACKLOG", 50)
    writer, reader = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    from_app = _FromApp(DirectCalls(_nothing), writer, "app", "main", relaying_streak("app", "main"))
    for _ in range(80):
        from_app.on_message(message(NOTE))
    assert from_app.dropped == 80 - 50  # counted as they arrive
    received = 0
    with anyio.move_on_after(5):
        while received < 50:
            await reader.receive()
            received += 1
    assert received == 50  # every message kept in the backlog reached the session
    from_app.close()
    writer.close()
    reader.close()
