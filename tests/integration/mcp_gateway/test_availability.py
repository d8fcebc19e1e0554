"""An app that never answers `initialize` is unavailable with the reason; the others serve.
The gateway is a NATS micro service: discoverable, with per-endpoint stats."""

from __future__ import annotations

import json

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.stack import Stack
from tests.harness.waiting import poll
from tests.integration.mcp_gateway.helpers import SILENT_TIMEOUT, call, cli


async def test_an_app_that_never_initializes_is_unavailable_and_the_others_serve(
    platform: Stack, pnc: NATS, subjects: Subjects
) -> None:
    shown = cli(platform.url, "apps", "--json")
    assert shown.returncode == 0, shown.stderr
    rows = {row["app"]: row for row in json.loads(shown.stdout)}

    silent = rows["test.silent"]
    assert silent["session"] == "unavailable", silent
    assert silent["process"] == "running", silent  # a protocol failure, not a crash
    assert f"initialize did not finish within {SILENT_TIMEOUT:g}s" in silent["last_error"], silent
    for app in ("test.echo", "time", "im.polaris.weather", "acme.notes"):
        assert rows[app]["session"] == "connected" and rows[app]["last_error"] is None, rows[app]
    assert rows["acme.notes"]["transport"] == "streamable_http"

    result = await call(pnc, subjects, "test.echo.echo", {"still": "serving"})
    assert result["status"] == "ok", result


async def test_the_gateway_answers_micro_ping_and_counts_tool_calls(
    platform: Stack, pnc: NATS, subjects: Subjects
) -> None:
    ping = json.loads((await pnc.request("$SRV.PING.aurora-mcp-gateway", b"", timeout=2)).data)
    assert ping["name"] == "aurora-mcp-gateway" and ping["type"] == "io.nats.micro.v1.ping_response"

    async def tool_calls() -> int:
        stats = json.loads((await pnc.request("$SRV.STATS.aurora-mcp-gateway", b"", timeout=2)).data)
        endpoint = next(e for e in stats["endpoints"] if e["subject"] == subjects.operator_tool_call)
        return int(endpoint["num_requests"])

    before = await tool_calls()
    for i in range(5):
        assert (await call(pnc, subjects, "test.echo.echo", {"i": i}))["status"] == "ok"
    assert (await call(pnc, subjects, "no.such.tool", {}))["status"] == "denied"
    assert await tool_calls() == before + 6


async def test_a_call_left_unanswered_is_the_apps_session_error_until_it_answers_again(
    platform: Stack, pnc: NATS, subjects: Subjects
) -> None:
    """A call on the supervisor's relay (the gateway writes it itself) like one over the SDK."""
    def echo_row() -> dict:
        shown = cli(platform.url, "apps", "--json")
        assert shown.returncode == 0, shown.stderr
        return {row["app"]: row for row in json.loads(shown.stdout)}["test.echo"]

    timed_out = await call(pnc, subjects, "test.echo.slow", {"seconds": 5}, timeout=0.5)
    assert timed_out["status"] == "timeout", timed_out

    async def said() -> dict | None:
        row = echo_row()
        return row if "tools/call slow: no answer within 0.5s" in str(row["session_error"]) else None

    await poll(said, what="the unanswered call as test.echo's session error")
    assert (await call(pnc, subjects, "test.echo.echo", {"again": True}))["status"] == "ok"

    async def cleared() -> dict | None:
        row = echo_row()
        return row if row["session_error"] is None else None

    await poll(cleared, what="test.echo's session error cleared by its next answer")
