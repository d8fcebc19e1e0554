"""Tool calls the gateway writes on an app's relay itself: ids of its own, answers routed back,
everything else left to the SDK, abandoned calls cancelled at the app, a closed relay fails
what waits, and a request still unanswered sent again for a while."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from services.mcp_gateway.transports.direct import ID_PREFIX, ConnectionLost, DirectCalls, NotDelivered, result_of


class Relay:
    """What the gateway wrote on c2s, decoded."""

    def __init__(self) -> None:
        self.written: list[dict[str, Any]] = []
        self.request_ids: list[str | None] = []
        self.first_sent: list[float | None] = []  # for a copy, when the first was sent
        self._wrote = asyncio.Event()

    async def publish(self, data: bytes, request_id: str | None, first_sent: float | None) -> None:
        self.written.append(json.loads(data))
        self.request_ids.append(request_id)
        self.first_sent.append(first_sent)
        self._wrote.set()

    def copies(self, request_id: str) -> int:
        return sum(1 for r, f in zip(self.request_ids, self.first_sent, strict=True) if r == request_id and f)

    async def copied(self, request_id: str, at_least: int = 1) -> None:
        while self.copies(request_id) < at_least:
            self._wrote.clear()
            await self._wrote.wait()


def response(request_id: object, **body: object) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, **body}).encode()


async def test_a_request_goes_out_with_an_id_of_its_own_and_its_answer_comes_back() -> None:
    relay = Relay()
    calls = DirectCalls(relay.publish)
    first, answer = await calls.send("tools/call", {"name": "echo", "arguments": {"n": 1}})
    second, _ = await calls.send("tools/call", {"name": "echo", "arguments": {"n": 2}})
    assert first.startswith(ID_PREFIX) and second != first
    assert relay.written[0] == {"jsonrpc": "2.0", "id": first, "method": "tools/call",
                                "params": {"name": "echo", "arguments": {"n": 1}}}

    assert calls.answer(response(first, result={"content": [], "structuredContent": {"n": 1}}))
    assert result_of(answer.result()) == {"content": [], "structuredContent": {"n": 1}}
    assert answer.result().error is None


async def test_an_error_response_is_carried_to_the_caller() -> None:
    calls = DirectCalls(Relay().publish)
    request_id, answer = await calls.send("tools/call", {"name": "nope"})
    assert calls.answer(response(request_id, error={"code": -32602, "message": "unknown tool"}))
    assert answer.result().error == {"code": -32602, "message": "unknown tool"}
    assert result_of(answer.result()) == {}


@pytest.mark.parametrize("message", [
    response(1, result={}),  # the SDK's own request ids are numbers
    response("aurora-999", result={}),  # not a pending request of ours
    b'{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}',
    b'{"jsonrpc": "2.0", "id": "aurora-1", "method": "ping"}',  # a server request, whatever its id
    b"not json at all",
])
async def test_everything_else_is_left_to_the_sdk(message: bytes) -> None:
    calls = DirectCalls(Relay().publish)
    _, answer = await calls.send("tools/call", {"name": "echo"})
    assert not calls.answer(message)
    assert not answer.done()


async def test_an_abandoned_call_is_cancelled_at_the_app_and_its_late_answer_swallowed() -> None:
    relay = Relay()
    calls = DirectCalls(relay.publish)
    request_id, answer = await calls.send("tools/call", {"name": "slow"})
    await calls.abandon(request_id, "no answer in time")
    assert relay.written[-1] == {"jsonrpc": "2.0", "method": "notifications/cancelled",
                                 "params": {"requestId": request_id, "reason": "no answer in time"}}
    assert calls.answer(response(request_id, result={"content": []}))  # consumed, not the SDK's
    assert not answer.done()
    await calls.abandon(request_id, "again")  # once is enough
    assert len(relay.written) == 2


async def test_a_request_nobody_heard_fails_as_not_delivered_and_only_that_one() -> None:
    relay = Relay()
    calls = DirectCalls(relay.publish)
    first, unheard = await calls.send("tools/call", {"name": "write"})
    second, heard = await calls.send("tools/call", {"name": "write"})
    await calls.abandon(second, "no answer in time")
    assert relay.request_ids == [first, second, None]  # a request names itself; a notification does not

    assert calls.unheard(first, "amp.mcp.app.main.c2s")
    with pytest.raises(NotDelivered, match=r"nobody listened on amp\.mcp\.app\.main\.c2s"):
        await asyncio.wait_for(unheard, 1)
    assert not calls.unheard(first, "amp.mcp.app.main.c2s")  # once
    assert not calls.unheard(second, "amp.mcp.app.main.c2s")  # given up already: nothing waits
    assert not heard.done()


async def test_closing_the_relay_fails_waiting_calls_and_refuses_new_ones() -> None:
    calls = DirectCalls(Relay().publish)
    _, answer = await calls.send("tools/call", {"name": "slow"})
    calls.close()
    with pytest.raises(ConnectionLost):
        await asyncio.wait_for(answer, 1)
    with pytest.raises(ConnectionLost):
        await calls.send("tools/call", {"name": "echo"})


async def test_a_failed_write_leaves_nothing_pending() -> None:
    async def broken(data: bytes, request_id: str | None, first_sent: float | None) -> None:
        raise OSError("connection closed")

    calls = DirectCalls(broken)
    with pytest.raises(OSError):
        await calls.send("tools/call", {"name": "echo"})
    assert not calls.answer(response(f"{ID_PREFIX}1", result={}))


async def test_progress_of_a_call_in_flight_is_noted_in_order_before_its_answer() -> None:
    calls = DirectCalls(Relay().publish)
    noted: list[Any] = []
    calls.progressed = lambda params: noted.append(params) is None and (params or {}).get("progressToken") == "ours"
    request_id, answer = await calls.send("tools/call", {"name": "echo", "_meta": {"progressToken": "ours"}})

    def progress(token: str, n: int) -> bytes:
        return json.dumps({"jsonrpc": "2.0", "method": "notifications/progress",
                           "params": {"progressToken": token, "progress": n}}).encode()

    assert calls.answer(progress("ours", 1)) and calls.answer(progress("ours", 2))
    assert not calls.answer(progress("someone else's", 3))  # not one of the session's calls: the SDK's
    assert calls.answer(response(request_id, result={}))
    assert [p["progress"] for p in noted] == [1, 2, 3] and answer.done()


async def test_progress_is_left_to_the_sdk_when_the_session_takes_none() -> None:
    calls = DirectCalls(Relay().publish)
    await calls.send("tools/call", {"name": "echo"})
    note = b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "t", "progress": 1}}'
    assert not calls.answer(note)


FAST = {"resend_first": 0.01, "resend_last": 0.02}


async def test_a_request_unanswered_is_sent_again_as_a_copy_until_its_answer_comes() -> None:
    relay = Relay()
    calls = DirectCalls(relay.publish, **FAST)
    request_id, answer = await calls.send("tools/call", {"name": "write", "arguments": {"n": 1}})
    await asyncio.wait_for(relay.copied(request_id, at_least=3), 5)
    assert all(w == relay.written[0] for w in relay.written)  # the very same request each time
    assert relay.first_sent[0] is None  # the first is no copy
    assert len(set(relay.first_sent[1:])) == 1 and relay.first_sent[1] is not None  # each copy: when the first went

    assert calls.answer(response(request_id, result={"content": []}))
    assert answer.done()
    copies = relay.copies(request_id)
    other, _ = await calls.send("tools/call", {"name": "write"})
    await asyncio.wait_for(relay.copied(other, at_least=3), 5)  # time enough for more copies of the first
    assert relay.copies(request_id) == copies
    assert calls.answer(response(request_id, result={}))  # a copy's late answer: ours, not the SDK's


async def test_after_a_copy_went_out_nobody_listening_does_not_say_the_call_did_not_run() -> None:
    relay = Relay()
    calls = DirectCalls(relay.publish, **FAST)
    request_id, answer = await calls.send("tools/call", {"name": "write"})
    await asyncio.wait_for(relay.copied(request_id), 5)
    assert not calls.unheard(request_id, "amp.mcp.app.main.c2s")  # an earlier one may have reached the app
    assert not answer.done()
    assert calls.answer(response(request_id, result={"content": []}))
    assert answer.result().error is None


async def test_copies_are_sent_only_within_the_window() -> None:
    relay = Relay()
    calls = DirectCalls(relay.publish, window=0.1, **FAST)
    request_id, answer = await calls.send("tools/call", {"name": "slow"})
    await asyncio.sleep(0.15)
    copies = relay.copies(request_id)
    assert 1 <= copies <= 10
    other, _ = await calls.send("tools/call", {"name": "slow"})
    await asyncio.wait_for(relay.copied(other, at_least=3), 5)  # time enough for more copies of the first
    assert relay.copies(request_id) == copies and not answer.done()


async def test_an_abandoned_or_closed_call_is_not_sent_again() -> None:
    relay = Relay()
    calls = DirectCalls(relay.publish, **FAST)
    gone, _ = await calls.send("tools/call", {"name": "slow"})
    await calls.abandon(gone, "no answer in time")
    watched, _ = await calls.send("tools/call", {"name": "slow"})
    await asyncio.wait_for(relay.copied(watched, at_least=3), 5)
    assert relay.copies(gone) == 0
    calls.close()
    copies = relay.copies(watched)
    elsewhere = Relay()
    third, _ = await DirectCalls(elsewhere.publish, **FAST).send("tools/call", {"name": "slow"})
    await asyncio.wait_for(elsewhere.copied(third, at_least=3), 5)  # time enough for more copies
    assert relay.copies(watched) == copies
