"""The industrial demo system (`apps.aurora_app_industrial`) over stdio with a real MCP client:
reads, idempotent saves, the lost response and the failed enable it can be told to produce, and
its `alarm.raised` events (on demand and on its own schedule)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from shared.contracts.validation import validate_native_event
from tests.harness.mcp_apps import AppClient, stdio_app

READS = {"find_device", "get_device", "list_points", "list_alarms", "list_rules", "draft_rule", "get_rule"}
WRITES = {"save_rule", "enable_rule"}
CONTROLS = {"raise_alarm", "drop_next_save_response", "fail_next_enable"}


Plant = AppClient


@asynccontextmanager
async def plant(startup: dict[str, Any] | None = None) -> AsyncIterator[Plant]:
    env = {"PATH": "/usr/bin:/bin", "AURORA_APP_STARTUP": json.dumps(startup or {})}
    async with stdio_app("apps.aurora_app_industrial", env) as (session, events):
        yield Plant(session, events)


async def test_tools_are_annotated_by_their_side_effect() -> None:
    async with plant() as app:
        tools = {t.name: t for t in (await app.session.list_tools()).tools}
    assert set(tools) == READS | WRITES | CONTROLS
    for name in READS:
        hints = tools[name].annotations
        assert hints is not None and hints.read_only_hint is True, name
    for name in WRITES | CONTROLS:
        hints = tools[name].annotations
        assert hints is not None and hints.read_only_hint is False, name
    assert "idempotency_key" in tools["save_rule"].input_schema["required"]


async def test_every_string_argument_has_a_length() -> None:
    """A model held to the schema ends a string there instead of writing on; longer is refused."""
    async with plant() as app:
        tools = (await app.session.list_tools()).tools
        unbounded = [(t.name, name) for t in tools for name, prop in t.input_schema.get("properties", {}).items()
                     for kind in (prop.get("anyOf") or [prop]) if kind.get("type") == "string"
                     and not kind.get("maxLength")]
        assert not unbounded, unbounded
        assert "at most 64" in await app.error("list_points", device_id="P-101" * 20)


async def test_devices_points_with_units_and_alarms_newest_first() -> None:
    async with plant() as app:
        device = await app.call("find_device", text="设备 P-101 最近的告警和资产档案")
        assert device["device_id"] == "P-101" and device["name"] == "Pump P-101"
        assert (await app.call("find_device", text="what about Fan F-9?"))["device_id"] == "F-9"
        assert "known: P-101, C-3, F-9" in await app.error("find_device", text="设备 X-1 的告警")
        points = await app.call("list_points", device_id="P-101")
        assert {p["point_id"]: p["unit"] for p in points["items"]} == {"TT-204": "°C", "PT-110": "bar"}
        alarms = await app.call("list_alarms", device_id="C-3")
        assert alarms["latest"]["alarm_id"] == "ALM-1003" and alarms["latest"]["device_name"] == "Compressor C-3"


async def test_a_save_is_idempotent_by_its_key_and_reads_back() -> None:
    async with plant() as app:
        draft = await app.call("draft_rule", device_id="P-101", description="温度超过 90 告警")
        assert (draft["point_id"], draft["operator"], draft["threshold"], draft["unit"]) == ("TT-204", ">", 90.0, "°C")
        fields = {k: draft[k] for k in ("device_id", "point_id", "operator", "threshold", "name", "idempotency_key")}
        first = await app.call("save_rule", **fields)
        again = await app.call("save_rule", **fields)
        assert first["created"] is True and again["created"] is False and again["rule_id"] == first["rule_id"]
        assert (await app.call("list_rules", device_id="P-101"))["count"] == 1
        read = await app.call("get_rule", idempotency_key=draft["idempotency_key"])
        assert read["found"] is True and read["rule"]["rule_id"] == first["rule_id"]
        assert read["rule"]["enabled"] is False
        assert (await app.call("enable_rule", rule_id=first["rule_id"]))["enabled"] is True
        assert (await app.call("get_rule", idempotency_key="rule:none"))["found"] is False
        assert "no comparison" in await app.error("draft_rule", device_id="P-101", description="温度 90")


async def test_a_dropped_response_still_saves_and_a_failed_enable_fails_once() -> None:
    async with plant() as app:
        draft = await app.call("draft_rule", device_id="C-3", description="压力超过 8 告警")
        fields = {k: draft[k] for k in ("device_id", "point_id", "operator", "threshold", "name", "idempotency_key")}
        await app.call("drop_next_save_response")
        with anyio.move_on_after(1.5) as waited:
            await app.session.call_tool("save_rule", fields)
        assert waited.cancelled_caught  # no answer came back…
        read = await app.call("get_rule", idempotency_key=draft["idempotency_key"])
        assert read["found"] is True  # …but the rule was saved, once
        await app.call("fail_next_enable")
        assert "refused to enable" in await app.error("enable_rule", rule_id=read["rule"]["rule_id"])
        assert (await app.call("enable_rule", rule_id=read["rule"]["rule_id"]))["enabled"] is True


async def test_alarms_are_raised_on_demand_and_on_the_systems_own_schedule() -> None:
    async with plant({"alarm_interval_seconds": 0.3}) as app:
        scheduled = await app.next_event()
        native = validate_native_event(scheduled)  # a valid native event, or EnvelopeError
        assert native.payload.type == "alarm.raised" and scheduled["payload"]["subject"]["kind"] == "alarm"
    async with plant() as app:
        raised = await app.call("raise_alarm", device_id="F-9")
        event = await app.next_event()
        assert event["payload"]["data"]["alarm_id"] == raised["alarm_id"] == "ALM-1002"
        assert event["payload"]["data"]["device_name"] == "Fan F-9"
