"""What the gateway observes becomes AMP events through a real bridge: a session coming up, going
away and failing to initialize (`app.*`), a tool call's outcome (`tool.*`), and a resource read
(`resource.read`, only for an app whose config asks for it)."""

from __future__ import annotations

import json
import os
import signal
import uuid
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.stack import Stack
from tests.integration.mcp_gateway.helpers import (
    PYTHON,
    REPO,
    SILENT_TIMEOUT,
    call_envelope,
    call_until_ok,
    echo_app,
    poll,
    stdio,
    stored_events,
    supervised_pid,
    write_apps,
)

RESOURCES_APP = REPO / "tests" / "apps" / "resources_app.py"
# What tests/apps/resources_app.py serves.
GREETING_URI, GREETING = "memo://greeting", "你好, resources: the greeting memo"
LONG_URI = "memo://long"
LONG = "".join(chr(ord("a") + i % 26) for i in range(5000))

Event = tuple[int, str, dict[str, Any]]  # (position in AMP_EVENTS, subject, envelope)


async def _events(nc: NATS, subjects: Subjects) -> list[Event]:
    stored = await stored_events(nc.jetstream(), subjects)
    return [(i, subject, envelope) for i, (subject, envelope) in enumerate(stored)]


def _lifecycle(events: list[Event], app: str, state: str) -> list[Event]:
    """The gateway's own `app.<state>` events for `app` (they carry the transport in their
    detail; the supervisor's `app.process_*` events do not)."""
    token = app.replace(".", "_")
    return [e for e in events
            if e[1] == f"amp.evt.{token}.app.{state}" and "transport" in e[2]["payload"]["data"].get("detail", {})]


def _check_lifecycle(event: dict[str, Any], app: str, state: str, transport: str) -> None:
    assert event["header"]["method"] == "aurora/event"
    assert event["header"]["source"] == {"app": app, "instance": "default"}
    payload = event["payload"]
    assert payload["type"] == f"app.{state}"
    assert payload["subject"] == {"kind": "app", "id": f"{app}/default"}
    assert payload["data"]["state"] == state
    assert payload["data"]["detail"] == {"transport": transport}


async def _drained(nc: NATS) -> bool:
    """Every signal published so far has been taken and settled by the bridge."""
    info = await nc.jetstream().consumer_info("AMP_SIGNALS", "event-bridge")
    return bool(info.num_pending == 0 and info.num_ack_pending == 0)


# -- app.* ---------------------------------------------------------------------------------
async def test_sessions_that_come_up_or_never_initialize_are_app_events(
    platform: Stack, pnc: NATS, subjects: Subjects
) -> None:
    """On the shared platform: the stdio echo app and the Streamable HTTP notes app are
    `app.connected`; the app that never answers `initialize` is `app.init_failed`, with why."""
    async def found() -> dict[str, Event] | None:
        events = await _events(pnc, subjects)
        seen = {"echo": _lifecycle(events, "test.echo", "connected"),
                "notes": _lifecycle(events, "acme.notes", "connected"),
                "silent": _lifecycle(events, "test.silent", "init_failed")}
        return {k: v[0] for k, v in seen.items()} if all(seen.values()) else None

    first = await poll(found, timeout=15, what="app.connected for echo and notes, app.init_failed for silent")
    _check_lifecycle(first["echo"][2], "test.echo", "connected", "stdio")
    assert first["echo"][2]["payload"]["data"]["reason"] is None
    _check_lifecycle(first["notes"][2], "acme.notes", "connected", "streamable_http")
    silent = first["silent"][2]
    _check_lifecycle(silent, "test.silent", "init_failed", "stdio")
    reason = silent["payload"]["data"]["reason"]
    assert reason == f"initialize did not finish within {SILENT_TIMEOUT:g}s", reason
    assert reason in silent["payload"]["summary"]
    # The silent app never came up, so it was never connected.
    assert not _lifecycle(await _events(pnc, subjects), "test.silent", "connected")


async def test_an_app_that_dies_is_disconnected_then_connected_again(
    nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path
) -> None:
    await stack.serving("bridge")
    config = write_apps(tmp_path, {"echo": echo_app()})
    stack.launch("supervisor", apps=config)
    await stack.serving("gateway", apps=config)

    async def connected() -> list[Event]:
        return _lifecycle(await _events(nc, subjects), "test.echo", "connected")

    [up] = await poll(connected, what="app.connected for test.echo")
    _check_lifecycle(up[2], "test.echo", "connected", "stdio")

    pid = await supervised_pid(nc, subjects, "echo")
    os.kill(pid, signal.SIGKILL)

    async def came_back() -> tuple[list[Event], list[Event]] | None:
        events = await _events(nc, subjects)
        down, ups = _lifecycle(events, "test.echo", "disconnected"), _lifecycle(events, "test.echo", "connected")
        return (down, ups) if down and len(ups) >= 2 else None

    down, ups = await poll(came_back, timeout=20, what="app.disconnected, then app.connected again")
    assert len(down) == 1, down  # one death, one disconnection
    [(down_at, _, gone)] = down
    _check_lifecycle(gone, "test.echo", "disconnected", "stdio")
    reason = gone["payload"]["data"]["reason"]
    assert reason == "killed by signal SIGKILL", reason  # the supervisor's word for the death
    assert gone["payload"]["summary"] == f"app test.echo disconnected: {reason}"
    assert ups[0][0] < down_at < ups[1][0], "connected, disconnected, connected: in that order"
    _check_lifecycle(ups[1][2], "test.echo", "connected", "stdio")
    # And the session really serves again.
    assert (await call_until_ok(nc, subjects, "test.echo.echo", {"n": 1}))["structured"] == {"n": 1}


# -- tool.* --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("tool", "arguments", "timeout", "outcome", "status", "error_code"),
    [
        ("fail", {}, None, "failed", "tool_error", "tool_error"),
        ("slow", {"seconds": 5}, 0.5, "timeout", "timeout", "timeout"),
        ("echo", {"v": 1}, None, "succeeded", "ok", None),
    ],
    ids=["failed", "timeout", "succeeded"],
)
async def test_a_calls_outcome_is_a_tool_event_with_its_call_id(
    platform: Stack, pnc: NATS, subjects: Subjects, tool: str, arguments: dict[str, Any],
    timeout: float | None, outcome: str, status: str, error_code: str | None,
) -> None:
    session_id = f"s-{uuid.uuid4().hex[:8]}"
    request = call_envelope(f"test.echo.{tool}", arguments, timeout, context={"session_id": session_id})
    call_id = json.loads(request)["header"]["message_id"]
    reply = json.loads((await pnc.request(subjects.operator_tool_call, request, timeout=10)).data)
    result = reply["payload"]
    assert result["status"] == status, result

    async def event() -> tuple[str, dict[str, Any]] | None:
        for _, subject, envelope in await _events(pnc, subjects):
            data = envelope["payload"].get("data") or {}
            if envelope["payload"]["type"].startswith("tool.") and data.get("call_id") == call_id:
                return subject, envelope
        return None

    subject, envelope = await poll(event, timeout=10, what=f"the tool event of call {call_id}")
    assert subject == f"amp.evt.test_echo.tool.{outcome}"
    assert envelope["header"]["source"] == {"app": "test.echo", "instance": "default"}
    payload = envelope["payload"]
    assert payload["type"] == f"tool.{outcome}"
    assert payload["session_id"] == session_id
    assert payload["subject"] == {"kind": "tool", "id": f"test.echo.{tool}"}
    assert payload["summary"] == f"tool test.echo.{tool} {outcome} ({status})"
    data = payload["data"]
    assert data["tool"] == f"test.echo.{tool}" and data["status"] == status and data["call_id"] == call_id
    assert data["agent"] is None and data["run_id"] is None
    assert data["duration_ms"] == result["duration_ms"]
    if error_code is None:
        assert data["error"] is None and result.get("error") is None, (data, result)
    else:
        assert data["error"] == result["error"] and data["error"]["code"] == error_code, (data, result)
    if outcome == "failed":
        assert "intentional failure" in data["error"]["message"]
    if outcome == "timeout":
        assert 500 <= data["duration_ms"] < 3000, data


# -- resource.read -------------------------------------------------------------------------
def _resources_app(package: str, **mcp: Any) -> dict[str, Any]:
    return stdio([PYTHON, str(RESOURCES_APP)], package=package, mcp=mcp)


async def test_resource_reads_are_events_only_for_an_app_that_asks(
    nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path
) -> None:
    bridge = stack.launch("bridge")
    config = write_apps(tmp_path, {
        "memo": _resources_app("test.memo", publish_resource_reads=True),
        "quiet": _resources_app("test.quiet"),
    })
    stack.launch("supervisor", apps=config)
    await stack.serving("gateway", apps=config)
    await bridge.ready()

    async def read(app: str, uri: str) -> list[dict[str, Any]]:
        reply = await admin_request(nc, subjects, "gateway", "read_resource", {"app": app, "uri": uri}, timeout=10)
        contents: list[dict[str, Any]] = reply["contents"]
        return contents

    # Read first from the app that does not ask: had it published anything, it would be
    # before the events waited for below.
    assert await read("test.quiet", GREETING_URI) == [{"uri": GREETING_URI, "mimeType": "text/plain",
                                                      "text": GREETING}]
    assert await read("test.memo", GREETING_URI) == [{"uri": GREETING_URI, "mimeType": "text/plain",
                                                     "text": GREETING}]
    [long] = await read("test.memo", LONG_URI)
    assert long["text"] == LONG  # the caller gets all of it; the event keeps the start

    async def reads() -> dict[str, dict[str, Any]] | None:
        found = {e[2]["payload"]["data"]["uri"]: e[2] for e in await _events(nc, subjects)
                 if e[1] == "amp.evt.test_memo.resource.read"}
        return found if len(found) == 2 else None

    found = await poll(reads, timeout=10, what="two resource.read events from test.memo")
    greeting = found[GREETING_URI]
    assert greeting["header"]["source"] == {"app": "test.memo", "instance": "default"}
    assert greeting["payload"]["type"] == "resource.read"
    assert greeting["payload"]["subject"] == {"kind": "resource", "id": GREETING_URI}
    assert greeting["payload"]["data"] == {"uri": GREETING_URI, "mime_type": "text/plain",
                                           "size": len(GREETING), "text": GREETING}
    assert found[LONG_URI]["payload"]["data"] == {"uri": LONG_URI, "mime_type": "text/plain",
                                                  "size": len(LONG), "text": LONG[:4096]}

    await poll(lambda: _drained(nc), what="the bridge to settle every signal")
    events = await _events(nc, subjects)
    assert not [e for e in events if e[2]["payload"]["type"] == "resource.read"
                and e[2]["header"]["source"]["app"] != "test.memo"], "the quiet app's read became an event"
    assert len([e for e in events if e[2]["payload"]["type"] == "resource.read"]) == 2
    assert (await nc.jetstream().stream_info("AMP_DLQ")).state.messages == 0
