"""Remote apps of both MCP generations through the real gateway: a 2026-07-28-only server (no
`initialize`, list changes only on `subscriptions/listen`) and a 2025-11-25 handshake server,
each a real HTTP process; listed, called and followed through a list change alike, with the
generation in use shown in the session's health."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.modern_apps import GenerationApp, serving
from tests.harness.stack import Stack
from tests.harness.waiting import NOT_SERVING_YET
from tests.integration.mcp_gateway.helpers import call, call_until_ok, catalog, cli, poll, write_apps


@pytest.fixture(scope="module")
def stateless(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GenerationApp]:
    """One server for the module (a test that stops it starts it again)."""
    with serving(tmp_path_factory.mktemp("stateless"), "stateless") as app:
        yield app


@pytest.fixture(scope="module")
def handshake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GenerationApp]:
    """One server for the module (a test that stops it starts it again)."""
    with serving(tmp_path_factory.mktemp("handshake"), "handshake") as app:
        yield app


def remote(package: str, url: str, **mcp: Any) -> dict[str, Any]:
    return {"package": package, "mcp": {"transport": "streamable_http", "url": url, "health_timeout_seconds": 5,
                                        **mcp}}


async def session_of(nc: NATS, subjects: Subjects, app: str, status: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        try:
            sessions = await admin_request(nc, subjects, "gateway", "apps")
        except NOT_SERVING_YET:  # seen once on a loaded CI machine right after "serving"; a dead gateway times out
            return None
        mine = next((s for s in sessions if s["app"] == app), None)
        return mine if mine is not None and mine["status"] == status else None

    result: dict[str, Any] = await poll(found, what=f"{app} {status}")
    return result


async def added_and_called(nc: NATS, subjects: Subjects, package: str) -> None:
    """`add_tool` makes the app announce a list change; the gateway lists again and serves the new tool."""
    name = f"t_{uuid.uuid4().hex[:6]}"
    added = await call(nc, subjects, f"{package}.add_tool", {"name": name, "reply": "new:"})
    assert added["status"] == "ok", added

    async def listed() -> bool:
        return f"{package}.{name}" in await catalog(nc, subjects, package)

    await poll(listed, what=f"{package}.{name} in the catalog after the list change")
    answered = await call(nc, subjects, f"{package}.{name}", {"text": "hi"})
    assert answered["status"] == "ok" and "new:hi" in str(answered["content"]), answered


async def test_both_generations_list_call_and_follow_list_changes(
        nc: NATS, nats_url: str, subjects: Subjects, stack: Stack, tmp_path: Path,
        stateless: GenerationApp, handshake: GenerationApp) -> None:
    config = write_apps(tmp_path, {"modern": remote("test.modern", stateless.url),
                                   "classic": remote("test.classic", handshake.url)})
    await stack.serving("gateway", apps=config)
    for package, generation in (("test.modern", "stateless"), ("test.classic", "handshake")):
        echoed = await call_until_ok(nc, subjects, f"{package}.echo", {"text": "你好"})
        assert echoed["structured"] == {"text": "你好", "generation": generation}, echoed
        assert {f"{package}.track_shipment", f"{package}.add_tool"} <= set(await catalog(nc, subjects, package))
    modern = await session_of(nc, subjects, "test.modern", "connected")
    classic = await session_of(nc, subjects, "test.classic", "connected")
    assert (modern["protocol"], classic["protocol"]) == ("2026-07-28", "2025-11-25")
    assert modern["server_name"] == "aurora-test-stateless" and modern["last_error"] is None, modern

    async def both_listed() -> dict[str, Any] | None:
        # The apps bucket the CLI reads is written after the gateway's own state: read until both are there.
        shown = {row["app"]: row for row in json.loads(cli(nats_url, "apps", "--json").stdout)}
        listed = all(shown.get(app, {}).get("protocol") for app in ("test.modern", "test.classic"))
        return shown if listed else None

    shown = await poll(both_listed, what="both apps with their protocol in `aurora apps --json`")
    assert (shown["test.modern"]["protocol"], shown["test.classic"]["protocol"]) == ("2026-07-28", "2025-11-25")
    await added_and_called(nc, subjects, "test.modern")
    await added_and_called(nc, subjects, "test.classic")


async def test_a_pinned_generation_the_app_does_not_speak_leaves_it_unavailable_with_the_reason(
        nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path,
        stateless: GenerationApp, handshake: GenerationApp) -> None:
    config = write_apps(tmp_path, {"modern": remote("test.modern", stateless.url, protocol="handshake"),
                                   "classic": remote("test.classic", handshake.url, protocol="stateless")})
    await stack.serving("gateway", apps=config)
    modern = await session_of(nc, subjects, "test.modern", "unavailable")
    assert "initialize refused" in modern["last_error"] and "-32022" in modern["last_error"], modern
    classic = await session_of(nc, subjects, "test.classic", "unavailable")
    assert "server/discover refused" in classic["last_error"], classic


async def test_a_restarted_stateless_app_is_followed_again(
        nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path, stateless: GenerationApp) -> None:
    """No session and no replay: the dropped listen stream makes the gateway connect and list
    again, and the new stream carries the next list change."""
    config = write_apps(tmp_path, {"modern": remote("test.modern", stateless.url)})
    await stack.serving("gateway", apps=config)
    await call_until_ok(nc, subjects, "test.modern.echo", {"text": "before"})
    stateless.stop()
    lost = await session_of(nc, subjects, "test.modern", "disconnected")
    assert "subscriptions/listen" in lost["last_error"], lost
    stateless.start()
    await call_until_ok(nc, subjects, "test.modern.echo", {"text": "after"})
    await session_of(nc, subjects, "test.modern", "connected")
    await added_and_called(nc, subjects, "test.modern")
