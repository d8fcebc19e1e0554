"""The gateway's copies of a call, at the real supervisor with a real MCP app: a copy whose first
was lost is written, a copy of an answered call gets the app's answer again and the app runs
nothing twice, a copy of a call still running is dropped, and a copy from a session that did
not begin with this generation of the app is refused. And the other way: an app's event is sent
again, with one token, until the gateway confirms it stored, by the app's next generation if it
exited first."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from shared.contracts.subjects import Subjects
from shared.nats import write_through
from shared.nats.bus import NOT_WRITTEN_HEADER, RECEIPT_HEADER, RESEND_HEADER, unheard_token
from tests.harness.processes import Spawn
from tests.integration.app_supervisor.helpers import (
    ECHO_APP,
    INITIALIZED,
    MODULE,
    PYTHON,
    Channels,
    Running,
    app_entry,
    initialize,
    log_records,
    poll,
    write_config,
)

APP = "test.echo"


class Gateway:
    """Writes on the relay as the gateway does: the session's inbox with its `initialize`, each
    call with `<inbox>.<id>` as its reply subject, a copy with the resend header."""

    def __init__(self, nc: NATS, subjects: Subjects, channels: Channels) -> None:
        self.nc = nc
        self.c2s = subjects.mcp(APP, "default", "c2s")
        self.channels = channels
        self.inbox = nc.new_inbox()

    async def begin(self) -> None:
        await self.nc.publish(self.c2s, initialize(1), reply=f"{self.inbox}.initialize")
        await self.channels.wait(lambda: self.answers(1), what="the initialize answer")
        await self.nc.publish(self.c2s, INITIALIZED)

    async def call(self, request_id: str, tool: str, arguments: dict[str, Any], *,
                   copy_of: float | None = None, inbox: str | None = None) -> None:
        request = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments}}
        headers = {RESEND_HEADER: f"{copy_of:.3f}"} if copy_of is not None else None
        await self.nc.publish(self.c2s, json.dumps(request).encode(), reply=f"{inbox or self.inbox}.{request_id}",
                              headers=headers)

    def answers(self, request_id: str | int) -> list[bytes]:
        return [line for line in self.channels.replies() if json.loads(line).get("id") == request_id]

    async def answered(self, request_id: str, count: int = 1) -> list[bytes]:
        return await self.channels.wait(lambda: len(self.answers(request_id)) >= count and self.answers(request_id),
                                        what=f"{count} answers to {request_id}")


def increments(counter: Path, key: str) -> int:
    lines = counter.read_text().splitlines() if counter.exists() else []
    return sum(1 for line in lines if json.loads(line)["key"] == key)


async def test_copies_of_a_call_make_it_run_once_and_answer_each_time(
    nc: NATS, subjects: Subjects, spawn: Spawn, tmp_path: Path
) -> None:
    counter = tmp_path / "counter.jsonl"
    config = write_config(tmp_path, {"echo": app_entry([PYTHON, str(ECHO_APP)], package=APP,
                                                       mcp={"env": {"ECHO_COUNTER_FILE": str(counter)}})})
    channels = await Channels(nc, subjects, APP).start()
    supervisor = spawn(MODULE, AURORA_APPS_CONFIG=str(config))
    await channels.wait_state("started", 1)
    gateway = Gateway(nc, subjects, channels)
    await gateway.begin()

    # The first was lost on the way: its copy is the one the app gets.
    await gateway.call("aurora-1", "counter_increment", {"key": "lost-request"}, copy_of=time.time() - 1)
    first = await gateway.answered("aurora-1")
    assert json.loads(first[0])["result"]["structuredContent"] == {"key": "lost-request", "count": 1}

    # Its answer was lost on the way: a copy gets the same answer again; the app ran it once.
    await gateway.call("aurora-1", "counter_increment", {"key": "lost-request"}, copy_of=time.time() - 2)
    again = await gateway.answered("aurora-1", count=2)
    assert again[0] == again[1]
    assert increments(counter, "lost-request") == 1

    # A copy while the app still works on the call: dropped, one answer.
    await gateway.call("aurora-2", "slow", {"seconds": 0.5})
    await gateway.call("aurora-2", "slow", {"seconds": 0.5}, copy_of=time.time())
    # A copy from a session that began with another generation: never written.
    await gateway.call("aurora-3", "counter_increment", {"key": "elsewhere"}, copy_of=time.time() - 1,
                       inbox=nc.new_inbox())
    await gateway.call("aurora-4", "counter_get", {"key": "elsewhere"})
    counted = await gateway.answered("aurora-4")
    assert json.loads(counted[0])["result"]["structuredContent"]["count"] == 0
    await gateway.answered("aurora-2")
    await gateway.call("aurora-5", "echo", {"value": "after"})  # c2s is taken in order: all before it is done
    await gateway.answered("aurora-5")
    assert len(gateway.answers("aurora-2")) == 1 and gateway.answers("aurora-3") == []

    async def refused_copies() -> list[dict[str, Any]]:
        return [r for r in log_records(supervisor.logs())
                if r.get("msg", "").startswith("a copy of a call not written")]

    refused = await poll(refused_copies, timeout=10, what="the refused copy in the supervisor's log")
    assert refused[0]["app"] == "echo"


async def test_a_call_of_a_session_that_did_not_begin_with_this_app_process_is_not_written_and_said(
    nc: NATS, subjects: Subjects, spawn: Spawn, tmp_path: Path
) -> None:
    """A gateway's session still standing on an earlier process of the app (a supervisor that
    restarted, before the gateway heard of it): the call is not written to this process, which
    never heard the session's `initialize`, and the gateway is told at once on the call's reply
    subject that nothing ran. Once the session begins here, its calls are written."""
    counter = tmp_path / "counter.jsonl"
    config = write_config(tmp_path, {"echo": app_entry([PYTHON, str(ECHO_APP)], package=APP,
                                                       mcp={"env": {"ECHO_COUNTER_FILE": str(counter)}})})
    channels = await Channels(nc, subjects, APP).start()
    spawn(MODULE, AURORA_APPS_CONFIG=str(config))
    await channels.wait_state("started", 1)
    gateway = Gateway(nc, subjects, channels)
    told: list[Msg] = []

    async def on_reply(msg: Msg) -> None:
        told.append(msg)

    await nc.subscribe(f"{gateway.inbox}.*", cb=on_reply)
    await gateway.call("aurora-1", "counter_increment", {"key": "stale"})
    await channels.wait(lambda: told, what="the supervisor's word on the call's reply subject")
    assert told[0].subject == f"{gateway.inbox}.aurora-1"
    assert "did not begin with this process" in (told[0].headers or {}).get(NOT_WRITTEN_HEADER, ""), told[0].headers
    assert unheard_token(told[0]) == "aurora-1"  # how the gateway's relay reads it: not delivered

    await gateway.begin()
    await gateway.call("aurora-2", "counter_get", {"key": "stale"})
    counted = await gateway.answered("aurora-2")
    assert json.loads(counted[0])["result"]["structuredContent"]["count"] == 0  # the first never ran
    assert gateway.answers("aurora-1") == []


async def test_an_app_event_is_sent_again_with_its_token_until_the_gateway_confirms_it(
    nc: NATS, subjects: Subjects, relay: Running
) -> None:
    seen: list[tuple[bytes, str | None]] = []

    async def on_s2c(msg: Msg) -> None:
        seen.append((msg.data, (msg.headers or {}).get(RECEIPT_HEADER)))

    await nc.subscribe(subjects.mcp("test.relay", "default", "s2c"), cb=on_s2c)
    await write_through.flush(nc)
    event = b'{"jsonrpc":"2.0","method":"aurora/event","params":{"payload":{"type":"thing.happened"}}}'
    await relay.channels.send(event)  # the relay app writes back what it reads: an event of the app's

    async def copies() -> list[str | None]:
        tokens = [token for data, token in seen if data == event]
        return tokens if len(tokens) >= 2 else []

    first, again = (await poll(copies, timeout=10, what="the event sent again, unconfirmed"))[:2]
    assert first is not None and first == again  # one token for every copy

    await nc.publish(subjects.mcp("test.relay", "default", "rcpt"), b"", headers={RECEIPT_HEADER: first})  # stored
    await relay.channels.send(b'{"after":"confirmed"}')
    await relay.channels.wait(lambda: b'{"after":"confirmed"}' in relay.channels.replies(), what="the next line")
    assert [data for data, token in seen if token is None and data != event] == [b'{"after":"confirmed"}']
    assert not [r for r in log_records(relay.supervisor.logs()) if r.get("msg", "").startswith("c2s message dropped")]
    # The receipt came before the line after it (one connection, in order), so nothing waits:
    # the generation that ends now leaves no event for the next (said before the next starts).
    await relay.channels.send(b'{"exit": 3}')
    await relay.channels.wait_state("started", 2)
    assert not [r for r in log_records(relay.supervisor.logs())
                if r.get("msg", "").startswith("app exited with events not yet confirmed")]


async def test_a_flood_of_unconfirmed_events_is_sent_again_in_batches_and_said_in_a_line(
    nc: NATS, subjects: Subjects, relay: Running
) -> None:
    """Thousands of events nobody confirms (no gateway stores them): each is sent again, and the
    supervisor says so once for all of them, not once per moment a few fell due."""
    flood = 3000
    copies: dict[str, int] = {}

    async def on_s2c(msg: Msg) -> None:
        token = (msg.headers or {}).get(RECEIPT_HEADER)
        if token is not None:
            copies[token] = copies.get(token, 0) + 1

    await nc.subscribe(subjects.mcp("test.relay", "default", "s2c"), cb=on_s2c)
    await write_through.flush(nc)
    c2s = subjects.mcp("test.relay", "default", "c2s")
    for n in range(flood):  # the relay app writes each back: an event of the app's
        await nc.publish(c2s, b'{"jsonrpc":"2.0","method":"aurora/event","params":{"payload":{"n":%d}}}' % n)
    await nc.flush()

    async def each_sent_again() -> bool:
        return len(copies) == flood and min(copies.values()) >= 2

    await poll(each_sent_again, timeout=30, what=f"each of the {flood} events sent again")
    said = [r for r in log_records(relay.supervisor.logs()) if r.get("msg", "").endswith("; sent again")]
    assert 1 <= len(said) <= 2, [(r["ts"], r["events"]) for r in said]  # one a line every 5 s, the first at once
    assert said[0]["waiting"] == flood


async def test_an_event_not_confirmed_when_its_app_exited_is_sent_again_by_the_next_generation(
    nc: NATS, subjects: Subjects, relay: Running
) -> None:
    seen: list[tuple[float, bytes, str | None]] = []

    async def on_s2c(msg: Msg) -> None:
        seen.append((time.monotonic(), msg.data, (msg.headers or {}).get(RECEIPT_HEADER)))

    await nc.subscribe(subjects.mcp("test.relay", "default", "s2c"), cb=on_s2c)
    await write_through.flush(nc)
    event = b'{"jsonrpc":"2.0","method":"aurora/event","params":{"payload":{"type":"before.exit"}}}'
    await relay.channels.send(event)
    await relay.channels.wait(lambda: any(data == event for _, data, _ in seen), what="the event")
    await relay.channels.send(b'{"exit": 3}')  # gone before any gateway confirmed the event
    await relay.channels.wait_state("started", 2)
    restarted = next(s.at for s in relay.channels.seen if s.channel == "proc" and isinstance(s.data, dict)
                     and s.data["state"] == "started" and s.data["generation"] == 2)

    async def sent_by_the_next() -> list[str | None]:
        return [token for at, data, token in seen if data == event and at > restarted]

    tokens = await poll(sent_by_the_next, timeout=15, what="the event sent again by generation 2")
    assert tokens[0] == next(token for _, data, token in seen if data == event)  # the same event, the same token
