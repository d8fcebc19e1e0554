"""Calls through the running gateway: a third-party server used unchanged, every JSON type
echoed exactly, and the operator CLI."""

from __future__ import annotations

import json
from typing import Any

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.stack import Stack
from tests.integration.mcp_gateway.helpers import call, catalog, cli, exact

EVERY_TYPE: dict[str, Any] = {
    "int": 42,
    "negative": -7,
    "zero": 0,
    "float": 3.25,
    "one_point_zero": 1.0,
    "tiny": 1e-7,
    "huge": 1.5e300,
    "int64_max": 2**63 - 1,
    "beyond_js_safe": 2**53 + 1,
    "big_int": 2**64 + 1,
    "true": True,
    "false": False,
    "null": None,
    "json_string": '{"a": 1, "b": [true, null]}',
    "number_string": "1.0",
    "bool_string": "true",
    "null_string": "null",
    "unicode": "北京 ☔ \u00e9\t\n\"quoted\"",
    "empty_string": "",
    "array": [1, 1.0, "1", True, None, [], {}],
    "nested": {"a": {"b": {"c": [1, {"d": 2.5, "e": [None, False, {"f": "g"}]}]}}},
    "empty_object": {},
    "empty_array": [],
}


async def test_a_third_party_server_used_unchanged_shows_prefixed_tools_that_work(
    platform: Stack, pnc: NATS, subjects: Subjects
) -> None:
    tools = await catalog(pnc, subjects, "time")
    assert set(tools) == {"time.get_current_time", "time.convert_time"}
    assert tools["time.get_current_time"]["tool"] == "get_current_time"
    assert "timezone" in tools["time.get_current_time"]["input_schema"]["properties"]

    now = await call(pnc, subjects, "time.get_current_time", {"timezone": "Asia/Shanghai"})
    assert now["status"] == "ok", now
    assert json.loads(now["content"][0]["text"])["timezone"] == "Asia/Shanghai"

    converted = await call(pnc, subjects, "time.convert_time",
                           {"source_timezone": "Europe/London", "time": "12:00", "target_timezone": "Asia/Tokyo"})
    assert converted["status"] == "ok", converted
    assert json.loads(converted["content"][0]["text"])["target"]["timezone"] == "Asia/Tokyo"

    refused = await call(pnc, subjects, "time.get_current_time", {"timezone": "Mars/Olympus"})
    assert refused["status"] == "tool_error" and refused["error"]["code"] == "tool_error", refused


async def test_every_json_type_is_echoed_exactly(platform: Stack, pnc: NATS, subjects: Subjects) -> None:
    result = await call(pnc, subjects, "test.echo.echo", EVERY_TYPE)
    assert result["status"] == "ok", result
    assert exact(result["structured"], EVERY_TYPE), result["structured"]
    assert exact(json.loads(result["content"][0]["text"]), EVERY_TYPE)
    # The exactness check itself tells the types apart.
    assert not exact({"v": 1}, {"v": 1.0}) and not exact({"v": True}, {"v": 1})


async def test_each_value_alone_keeps_its_type(platform: Stack, pnc: NATS, subjects: Subjects) -> None:
    for name, value in EVERY_TYPE.items():
        result = await call(pnc, subjects, "test.echo.echo", {"value": value})
        assert result["status"] == "ok", (name, result)
        assert exact(result["structured"], {"value": value}), (name, result["structured"])


async def test_the_cli_calls_and_lists_tools(platform: Stack) -> None:
    called = cli(platform.url, "tools", "call", "im.polaris.weather.get_weather", "--args", '{"city":"北京"}')
    assert called.returncode == 0, called.stderr
    assert "status: ok" in called.stdout and "北京" in called.stdout, called.stdout

    listed = cli(platform.url, "tools", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    tools = {t["name"]: t for t in json.loads(listed.stdout)}
    assert {"im.polaris.weather.get_weather", "time.get_current_time", "test.echo.echo",
            "acme.notes.add_note"} <= set(tools)
    assert tools["im.polaris.weather.get_weather"]["side_effect"] == "read"

    failed = cli(platform.url, "tools", "call", "test.echo.fail", "--json")
    assert failed.returncode == 3
    assert json.loads(failed.stdout)["status"] == "tool_error"
    # An unknown tool is answered too (not ok): 3, as the command's help says.
    unknown = cli(platform.url, "tools", "call", "test.echo.no_such_tool", "--json")
    assert unknown.returncode == 3 and json.loads(unknown.stdout)["status"] != "ok", unknown.stdout


async def test_progress_notes_sent_with_the_answer_are_all_in_the_result(
    platform: Stack, pnc: NATS, subjects: Subjects
) -> None:
    """The app writes its notes and its answer at once; the answer reaches the call in the read
    loop, yet never before the notes the session reads (transports/nats_stdio.py, `_FromApp`)."""
    for _ in range(30):
        result = await call(pnc, subjects, "test.echo.progress", {"notes": 3})
        assert result["status"] == "ok" and result["structured"] == {"notes": 3, "token": True}, result
        assert [(p["progress"], p["message"]) for p in result.get("progress") or []] == [
            (1.0, "note 1"), (2.0, "note 2"), (3.0, "note 3")], result


async def test_an_answer_is_checked_against_its_tools_output_schema(
    platform: Stack, pnc: NATS, subjects: Subjects
) -> None:
    """The app does not check its own output: the gateway does, on the relay as over the SDK. A
    plain text answer is read without the SDK's models only for a tool with no output schema."""
    fits = await call(pnc, subjects, "test.echo.shaped", {"answer": "right"})
    assert fits["status"] == "ok" and fits["structured"] == {"n": 1}, fits
    for answer in ("wrong", "text"):
        broken = await call(pnc, subjects, "test.echo.shaped", {"answer": answer})
        assert broken["status"] == "tool_error", (answer, broken)
        assert broken["error"]["code"] == "invalid_output", (answer, broken)
