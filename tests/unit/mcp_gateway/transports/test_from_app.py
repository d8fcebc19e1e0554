"""The relay's messages from an app (transports/nats_stdio.py, `_FromApp`): an answer to a direct
call is taken at once, unless messages for the session are still in hand (then it waits behind
them, in order); a session that reads slower than the app writes has the overflow dropped and
counted, never an unbounded backlog."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import pytest
from mcp.shared.message import SessionMessage
from nats.aio.msg import Msg

from services.mcp_gateway.transports import nats_stdio
from services.mcp_gateway.transports.direct import DirectCalls, NotDelivered
from services.mcp_gateway.transports.nats_stdio import _FromApp, relaying_streak
from shared.nats.bus import NOT_WRITTEN_HEADER


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


async def test_a_call_nobody_heard_fails_and_counts_against_the_relay_one_not_written_only_fails() -> None:
    """On the relay's `unheard` inbox: nats-server's 503 (no app-supervisor listens) fails the call
    and is part of the relay's failure streak; the app-supervisor's `Aurora-Not-Written` (the call's
    session did not begin with this process of the app) fails the call with its reason, and the
    relay is not failing: a supervisor is there."""
    direct = DirectCalls(_nothing)
    relaying = relaying_streak("app", "main")
    ended: list[str] = []
    on_status = nats_stdio._on_unheard(direct, "amp.mcp.app.main.c2s", relaying, lambda: ended.append("relay"))
    unheard, nobody = await direct.send("tools/call", {"name": "echo"})
    refused, not_written = await direct.send("tools/call", {"name": "echo"})

    on_status(Msg(None, subject=f"_INBOX.abc.{refused}",  # type: ignore[arg-type]
                  headers={NOT_WRITTEN_HEADER: "its session did not begin with this process of the app"}))
    with pytest.raises(NotDelivered, match="did not write it: its session did not begin"):
        await asyncio.wait_for(not_written, 1)
    assert relaying.failures == 0 and not nobody.done()

    on_status(Msg(None, subject=f"_INBOX.abc.{unheard}", headers={"Status": "503"}))  # type: ignore[arg-type]
    with pytest.raises(NotDelivered, match="nobody listened"):
        await asyncio.wait_for(nobody, 1)
    assert relaying.failures == 1
    assert ended == []  # a call nobody heard fails; the relay goes on


def test_an_initialize_nobody_heard_ends_the_relay_and_is_no_call_failure() -> None:
    """nats-server's 503 for the session's `initialize`: no app-supervisor runs the app's process,
    so the relay ends (the session says why at once); it is not a call, so no streak counts it."""
    relaying = relaying_streak("app", "main")
    ended: list[str] = []
    on_status = nats_stdio._on_unheard(DirectCalls(_nothing), "amp.mcp.app.main.c2s", relaying,
                                       lambda: ended.append("relay"))
    on_status(Msg(None, subject=f"_INBOX.abc.{nats_stdio.INITIALIZE_TOKEN}",  # type: ignore[arg-type]
                  headers={"Status": "503"}))
    assert ended == ["relay"]
    assert relaying.failures == 0
