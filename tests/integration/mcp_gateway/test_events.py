"""What apps send becomes AMP events through a real bridge, identified by the platform: a native
`aurora/event`, a vendor notification, and `tools/list_changed` from a Streamable HTTP app
(which also refreshes the catalog)."""

from __future__ import annotations

import json
import uuid
from typing import Any

from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from tests.harness.stack import Stack
from tests.integration.mcp_gateway.helpers import call, catalog, cli, poll, stored_events

WEATHER = "im.polaris.weather"


async def _event(pnc: NATS, subjects: Subjects, subject: str, match: dict[str, Any]) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        for stored_subject, envelope in await stored_events(pnc.jetstream(), subjects):
            data = envelope["payload"].get("data") or {}
            if stored_subject == subject and all(data.get(k) == v for k, v in match.items()):
                return envelope
        return None

    event: dict[str, Any] = await poll(probe, timeout=10, what=f"an event on {subject} with {match}")
    return event


async def test_a_native_aurora_event_arrives_with_the_platform_source(
    platform: Stack, pnc: NATS, subjects: Subjects
) -> None:
    marker = str(uuid.uuid4())
    result = await call(pnc, subjects, f"{WEATHER}.emit_event",
                        {"type": "weather.test_ping", "data": {"marker": marker, "n": 1.0},
                         "session_id": "group_1", "summary": "ping"})
    assert result["status"] == "ok", result

    event = await _event(pnc, subjects, "amp.evt.im_polaris_weather.weather.test_ping", {"marker": marker})
    assert event["header"]["method"] == "aurora/event"
    assert event["header"]["source"] == {"app": WEATHER, "instance": "default"}
    assert event["header"]["message_id"] and event["header"]["timestamp"]
    payload = event["payload"]
    assert payload["type"] == "weather.test_ping" and payload["session_id"] == "group_1"
    assert payload["data"] == {"marker": marker, "n": 1.0} and isinstance(payload["data"]["n"], float)


async def test_a_vendor_notification_arrives_as_a_notification_event(
    platform: Stack, pnc: NATS, subjects: Subjects
) -> None:
    marker = str(uuid.uuid4())
    params = {"marker": marker, "level": 3}
    result = await call(pnc, subjects, f"{WEATHER}.emit_notification",
                        {"method": "notifications/acme/ping", "params": params})
    assert result["status"] == "ok", result

    async def probe() -> dict[str, Any] | None:
        for subject, envelope in await stored_events(pnc.jetstream(), subjects):
            data = envelope["payload"].get("data") or {}
            if subject == "amp.evt.im_polaris_weather.notification.acme.ping" and data.get("params") == params:
                return envelope
        return None

    event = await poll(probe, what="notification.acme.ping")
    assert event["header"]["source"] == {"app": WEATHER, "instance": "default"}
    assert event["payload"]["type"] == "notification.acme.ping"
    assert event["payload"]["source_event_type"] == "notifications/acme/ping"
    assert event["payload"]["data"] == {"method": "notifications/acme/ping", "params": params}


async def test_a_streamable_http_app_serves_and_its_list_changed_refreshes_the_catalog(
    platform: Stack, pnc: NATS, subjects: Subjects
) -> None:
    tools = await catalog(pnc, subjects, "acme.notes")
    assert {"acme.notes.add_note", "acme.notes.list_notes", "acme.notes.delete_note",
            "acme.notes.add_tool", "acme.notes.remove_tool"} <= set(tools)
    assert tools["acme.notes.list_notes"]["side_effect"] == "read"
    assert tools["acme.notes.delete_note"]["side_effect"] == "dangerous"

    added = await call(pnc, subjects, "acme.notes.add_note", {"title": "北京", "body": "晴"})
    assert added["status"] == "ok" and added["structured"]["title"] == "北京", added
    # A dangerous tool waits for an approver's grant, the operator's call too (nothing is sent).
    held = await call(pnc, subjects, "acme.notes.delete_note", {"note_id": 987654})
    assert held["status"] == "needs_approval" and held["approval_id"], held

    def list_changed(events: list[tuple[str, dict[str, Any]]]) -> int:
        return sum(1 for subject, _ in events if subject == "amp.evt.acme_notes.tools.list_changed")

    before = list_changed(await stored_events(pnc.jetstream(), subjects))
    name = f"shout_{uuid.uuid4().hex[:8]}"
    result = await call(pnc, subjects, "acme.notes.add_tool", {"name": name, "reply": "ok:"})
    assert result["status"] == "ok", result

    async def listed() -> bool:
        return f"acme.notes.{name}" in await catalog(pnc, subjects, "acme.notes")

    await poll(listed, what=f"acme.notes.{name} in the catalog")
    shown = cli(platform.url, "tools", "list", "--app", "acme.notes", "--json")
    assert shown.returncode == 0, shown.stderr
    assert f"acme.notes.{name}" in {t["name"] for t in json.loads(shown.stdout)}
    new = await call(pnc, subjects, f"acme.notes.{name}", {"text": "hi"})
    assert new["status"] == "ok" and new["content"][0]["text"] == "ok:hi", new

    async def event_arrived() -> bool:
        return list_changed(await stored_events(pnc.jetstream(), subjects)) > before

    await poll(event_arrived, what="a tools.list_changed event from acme.notes")
