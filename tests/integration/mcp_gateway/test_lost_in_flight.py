"""A call or its answer lost in flight between the gateway and the supervisor — core NATS
delivers at most once, and a node that dies holding a message tells nobody — is sent again: the
call ends `ok` with the app having run it once, not `outcome_unknown` at its timeout. An app's
event lost so is sent again until the gateway confirms it stored: stored once, not lost.

The supervisor reaches nats-server through a proxy that loses every byte while the connection
stays open (`TcpProxy.blackhole`), then resets it: the supervisor reconnects, and the gateway's
next copy of the call finds it, as the supervisor's next copy of the event finds the gateway."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.processes import REPO, logged
from tests.harness.stack import Stack
from tests.harness.tcpproxy import TcpProxy
from tests.integration.mcp_gateway.helpers import (
    call,
    call_until_ok,
    echo_app,
    poll,
    stdio,
    stored_events,
    write_apps,
)


async def _stack(stack: Stack, proxy: TcpProxy, folder: Path, counter: Path) -> None:
    config = write_apps(folder, {"echo": echo_app(mcp={"env": {"ECHO_COUNTER_FILE": str(counter)}})})
    stack.launch("supervisor", apps=config, NATS_URL=proxy.url)
    await stack.serving("gateway", apps=config)


async def _seen(record: bytearray, needle: bytes, what: str) -> None:
    async def found() -> bool:
        return needle in record

    await poll(found, timeout=20, what=what)


async def test_a_call_lost_on_its_way_to_the_app_is_sent_again_and_runs_once(
    nc: NATS, subjects: Subjects, nats_proxy: TcpProxy, stack: Stack, tmp_path: Path
) -> None:
    counter = tmp_path / "counter.jsonl"
    await _stack(stack, nats_proxy, tmp_path, counter)
    await call_until_ok(nc, subjects, "test.echo.echo", {"warm": True})

    nats_proxy.blackhole()
    in_flight = asyncio.ensure_future(call(nc, subjects, "test.echo.counter_increment", {"key": "lost"}, timeout=25))
    await _seen(nats_proxy.lost, b"counter_increment", "the call lost on its way to the supervisor")
    nats_proxy.heal()
    result = await asyncio.wait_for(in_flight, 25)

    assert result["status"] == "ok", result
    assert result["structured"] == {"key": "lost", "count": 1}, result
    assert [json.loads(line)["key"] for line in counter.read_text().splitlines()] == ["lost"]


async def test_an_answer_lost_on_its_way_to_the_gateway_is_given_again(
    nc: NATS, subjects: Subjects, nats_proxy: TcpProxy, stack: Stack, tmp_path: Path
) -> None:
    await _stack(stack, nats_proxy, tmp_path, tmp_path / "counter.jsonl")
    await call_until_ok(nc, subjects, "test.echo.echo", {"warm": True})

    in_flight = asyncio.ensure_future(call(nc, subjects, "test.echo.slow", {"seconds": 1.5}, timeout=25))
    await _seen(nats_proxy.to_client, b'"name":"slow"', "the call to reach the supervisor")
    nats_proxy.blackhole()
    await _seen(nats_proxy.lost, b'"slept"', "the app's answer lost on its way to the gateway")
    nats_proxy.heal()
    result = await asyncio.wait_for(in_flight, 25)

    assert result["status"] == "ok", result
    assert result["structured"] == {"slept": 1.5}, result


async def test_an_event_lost_on_its_way_to_the_gateway_is_sent_until_stored_and_stored_once(
    nc: NATS, subjects: Subjects, nats_proxy: TcpProxy, stack: Stack, tmp_path: Path
) -> None:
    chat = stdio([sys.executable, "-m", "apps.aurora_app_chat"], package="test.chat",
                 mcp={"cwd": str(REPO), "env": {"CHAT_LOG_FILE": str(tmp_path / "sent.jsonl"), "CHAT_WEB_PORT": "off"}})
    config = write_apps(tmp_path, {"chat": chat})
    await stack.serving("bridge")
    supervisor = stack.launch("supervisor", apps=config, NATS_URL=nats_proxy.url)
    await stack.serving("gateway", apps=config)
    await call_until_ok(nc, subjects, "test.chat.simulate_message", {"session_id": "warm", "text": "warm"})

    async def received(session: str) -> list[dict[str, Any]]:
        return [event for _, event in await stored_events(nc.jetstream(), subjects)
                if event["payload"]["type"] == "message.received" and event["payload"].get("session_id") == session]

    await poll(lambda: received("warm"), timeout=20, what="the warm-up event stored")
    nats_proxy.blackhole(to_client=False)  # the call reaches the app; what the app writes is lost
    in_flight = asyncio.ensure_future(call(nc, subjects, "test.chat.simulate_message",
                                           {"session_id": "lost", "text": "hello"}, timeout=25))
    await _seen(nats_proxy.lost, b"aurora/event", "the app's event lost on its way to the gateway")
    nats_proxy.heal()
    assert (await asyncio.wait_for(in_flight, 25))["status"] == "ok"
    await logged(supervisor, "not yet confirmed stored by a gateway; sent again", timeout=20)
    await poll(lambda: received("lost"), timeout=20, what="the lost event stored")

    # Events are stored in the order the app wrote them: once the next one is stored, every copy
    # of the lost one has been through the gateway too.
    await call_until_ok(nc, subjects, "test.chat.simulate_message", {"session_id": "after", "text": "after"})
    await poll(lambda: received("after"), timeout=20, what="the next event stored")
    [event] = await received("lost")
    assert event["payload"]["data"]["text"] == "hello", event
