"""A remote app that wants a bearer token: `mcp.headers` values reference environment variables,
expanded when the gateway connects, and the secret never shows in the gateway's logs or health."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS

from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.notes_app import serving_notes
from tests.harness.stack import Stack
from tests.integration.mcp_gateway.helpers import call_until_ok, poll, write_apps

SECRET = f"s3cret-{uuid.uuid4().hex}"


@pytest.fixture
def guarded_notes(tmp_path: Path) -> Iterator[str]:
    """The notes app refusing every request without `Authorization: Bearer <SECRET>`."""
    with serving_notes(tmp_path, {**os.environ, "AURORA_NOTES_TOKEN": SECRET}) as url:
        yield url


def notes_app(url: str) -> dict[str, object]:
    return {"package": "guarded.notes", "mcp": {"transport": "streamable_http", "url": url,
                                                 "headers": {"Authorization": "Bearer ${AURORA_TEST_NOTES_TOKEN}"},
                                                 "health_timeout_seconds": 5}}


async def test_the_token_from_the_environment_opens_the_app_and_never_shows(
        nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path, guarded_notes: str) -> None:
    config = write_apps(tmp_path, {"notes": notes_app(guarded_notes)})
    gateway = await stack.serving("gateway", apps=config, AURORA_TEST_NOTES_TOKEN=SECRET)
    listed = await call_until_ok(nc, subjects, "guarded.notes.list_notes", {})
    assert listed["status"] == "ok"
    health = await admin_request(nc, subjects, "gateway", "apps")
    assert [a["status"] for a in health if a["app"] == "guarded.notes"] == ["connected"]
    assert SECRET not in gateway.logs() and SECRET not in str(health)
    assert SECRET not in config.read_text()  # the config names the variable, never the value


async def test_a_wrong_token_leaves_the_app_unavailable_with_the_reason_and_no_secret(
        nc: NATS, subjects: Subjects, stack: Stack, tmp_path: Path, guarded_notes: str) -> None:
    config = write_apps(tmp_path, {"notes": notes_app(guarded_notes)})
    wrong = f"wrong-{uuid.uuid4().hex}"
    gateway = await stack.serving("gateway", apps=config, AURORA_TEST_NOTES_TOKEN=wrong)

    async def refused() -> dict[str, object] | None:
        sessions = await admin_request(nc, subjects, "gateway", "apps")
        notes = next((s for s in sessions if s["app"] == "guarded.notes"), None)
        return notes if notes and notes["status"] == "unavailable" else None

    notes = await poll(refused, what="the guarded app marked unavailable")
    assert "HTTP 401 Unauthorized" in str(notes.get("last_error")), notes
    assert wrong not in gateway.logs() and wrong not in str(notes)
