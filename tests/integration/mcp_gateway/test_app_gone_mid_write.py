"""A write whose app went away during the call (it counted, then exited before answering): sent
again under its idempotency key once the app is back where the app deduplicates the tool on it,
and counted once; left `outcome_unknown` where the app does not."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.stack import Stack
from tests.harness.tool_pool import read_stream
from tests.integration.mcp_gateway.helpers import call, call_until_ok, echo_app, poll, supervised_pid, write_apps


def _counted(counter: Path, key: str) -> list[dict[str, object]]:
    lines = [json.loads(line) for line in counter.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [line for line in lines if line["key"] == key]


@pytest.mark.parametrize("declared", [True, False], ids=["deduplicating", "not-deduplicating"])
async def test_a_write_its_app_went_away_during(
    nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path, declared: bool
) -> None:
    counter = tmp_path / "counter.jsonl"
    mcp: dict[str, object] = {"env": {"ECHO_COUNTER_FILE": str(counter)}}
    if declared:
        mcp["idempotency_key_tools"] = ["keyed_increment"]
    config = write_apps(tmp_path, {"echo": echo_app(mcp=mcp)})
    stack.launch("supervisor", apps=config)
    gateway = await stack.serving("gateway", apps=config)
    await call_until_ok(nc, subjects, "test.echo.echo", {"n": 1}, timeout=40)
    first_pid = await supervised_pid(nc, subjects, "echo")

    result = await call(nc, subjects, "test.echo.keyed_increment", {"key": "k", "exit_first": True}, timeout=40)

    [counted] = _counted(counter, "k")  # it ran once, in the process that then exited
    assert counted["pid"] == first_pid
    if declared:
        assert result["status"] == "ok", result
        assert result["structured"] == {"key": "k", "count": 1, "again": True}  # the restarted app's answer
        assert result["sent_again"] == 1
        assert "sent again under its idempotency key" in gateway.logs()
        _, audited = await read_stream(nc, "AMP_AUDIT", subjects.audit("test.echo"),
                                       lambda record: record["tool"] == "test.echo.keyed_increment")
        assert audited["status"] == "ok" and audited["sent_again"] == 1, audited  # the audit says so too
        assert await supervised_pid(nc, subjects, "echo") != first_pid
    else:
        assert result["status"] == "outcome_unknown", result
        assert result["error"]["code"] == "app_went_away" and result["sent_again"] == 0


async def test_a_write_in_flight_when_the_supervisor_dies_with_its_app_is_answered_once(
    nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path
) -> None:
    """The supervisor SIGKILLed (its app with it) after the app counted and before it answered, and
    started again a moment later: the gateway sends the call again under its key to the new
    process, which answers with the first count."""
    counter = tmp_path / "counter.jsonl"
    config = write_apps(tmp_path, {"echo": echo_app(mcp={"env": {"ECHO_COUNTER_FILE": str(counter)},
                                                         "idempotency_key_tools": ["keyed_increment"]})})
    supervisor = stack.launch("supervisor", apps=config)
    await stack.serving("gateway", apps=config)
    await call_until_ok(nc, subjects, "test.echo.echo", {"n": 1}, timeout=40)
    first_pid = await supervised_pid(nc, subjects, "echo")

    async def counted() -> list[dict[str, object]]:
        return _counted(counter, "s") if counter.exists() else []

    in_flight = asyncio.ensure_future(
        call(nc, subjects, "test.echo.keyed_increment", {"key": "s", "then_sleep": 30}, timeout=40))
    await poll(counted, what="the write counted")
    supervisor.kill()
    stack.launch("supervisor", apps=config)
    result = await in_flight

    assert result["status"] == "ok", result
    assert result["structured"] == {"key": "s", "count": 1, "again": True} and result["sent_again"] == 1
    assert [line["pid"] for line in _counted(counter, "s")] == [first_pid]
