"""`aurora console` over HTTP against a bare nats-server (no Aurora service running, no
authentication: any name signs in): who it refuses, the security headers, sign-in and sign-out,
and sections that say which service does not answer."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from aurora_cli.clienv import URL_FILE, local_admin_file
from aurora_cli.devsecurity import local_admin_name
from shared.contracts.subjects import Subjects
from shared.jetstream.streams import ensure_stream, events_stream
from tests.harness.broker import Broker
from tests.harness.cli import Cli
from tests.harness.clients import nats_client
from tests.harness.processes import ServiceProcess, service_env
from tests.harness.waiting import poll, poll_sync

SERVING = re.compile(r"console serving (http://127\.0\.0\.1:(\d+)/)")
TOKEN = re.compile(r'<meta name="console-token" content="([^"]+)">')


@pytest.fixture
def console(nats_url: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(the console's URL, its Host header)."""
    process = ServiceProcess("aurora_cli.main", service_env(nats_url), tmp_path, "console",
                             args=["console", "--port", "0"]).start()
    try:
        match = poll_sync(lambda: SERVING.search(process.logs()), timeout=20, what="the console's address")
        yield match.group(1), f"127.0.0.1:{match.group(2)}"
    finally:
        process.terminate(timeout=10)


def sign_in(client: httpx.Client | httpx.AsyncClient, host: str) -> Any:
    return client.post("/sign-in", json={"name": "alice", "password": "any"}, headers={"origin": f"http://{host}"})


def test_pages_are_served_with_their_guards_and_say_what_does_not_answer(console: tuple[str, str]) -> None:
    url, host = console
    with httpx.Client(base_url=url, timeout=20) as client:
        # before sign-in: the sign-in form, no token, nothing read from the platform
        form = client.get("/")
        assert form.status_code == 200 and 'id="sign-in-form"' in form.text
        assert not TOKEN.search(form.text) and "mcp-gateway" not in form.text
        assert client.get("/part/approvals").status_code == 401
        assert client.get("/events/stream").status_code == 401
        # a sign-in from another site, or without saying where from, is refused
        assert client.post("/sign-in", json={"name": "alice", "password": "x"}).status_code == 401
        assert client.post("/sign-in", json={"name": "alice", "password": "x"},
                           headers={"origin": "http://evil.example"}).status_code == 401
        assert not client.cookies

        signed = sign_in(client, host)
        assert signed.status_code == 200 and "signed in as alice" in signed.text
        cookie = signed.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        page = client.get("/")
        assert page.status_code == 200
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY"
        assert 'signed in as <strong id="person">alice</strong>' in page.text
        assert "no mcp-gateway is running (nobody answers amp.admin.approvals.list.u.alice)" in page.text
        assert "no runner is running (nobody answers amp.admin.tasks.list.u.alice)" in page.text
        assert "no router is running" in page.text
        token_match = TOKEN.search(page.text)
        assert token_match
        token = token_match.group(1)

        # another name for 127.0.0.1 (DNS rebinding) reads nothing
        assert client.get("/", headers={"host": f"evil.example:{host.split(':')[1]}"}).status_code == 403
        assert client.get("/part/approvals", headers={"host": "evil.example"}).status_code == 403
        # a decision without the page's token, or from another site, is refused before anything is asked
        assert client.post("/approvals/apr-1/grant", json={}).status_code == 403
        assert client.post("/approvals/apr-1/grant", json={}, headers={
            "x-aurora-console-token": token, "origin": "http://evil.example"}).status_code == 403
        headers = {"x-aurora-console-token": token, "origin": f"http://{host}"}
        asked = client.post("/approvals/apr-1/grant", json={"note": "ok"}, headers=headers)
        assert asked.status_code == 409 and "no mcp-gateway is running" in asked.text
        assert client.post("/approvals/apr-1/allow", json={}, headers=headers).status_code == 404

        bad = client.post("/dry-run", json={"event": "{nope"}, headers=headers)
        assert bad.status_code == 400 and "the event is not JSON" in bad.text
        nobody = client.post("/dry-run", json={"event": '{"type": "message.received"}'}, headers=headers)
        assert nobody.status_code == 502 and "no router is running" in nobody.text
        assert client.get("/part/nothing").status_code == 404
        assert client.get("/static/console.js").headers["content-type"].startswith("text/javascript")

        # sign-out ends the session: its cookie and token are worth nothing after
        session = client.cookies.get("aurora_console_session")
        assert client.post("/sign-out", json={}, headers=headers).status_code == 200
        assert not client.cookies.get("aurora_console_session")  # the browser is told to forget it
        client.cookies.set("aurora_console_session", str(session))  # a copy kept is worth nothing
        assert client.get("/part/approvals").status_code == 401
        assert client.post("/approvals/apr-1/grant", json={}, headers=headers).status_code == 401


def test_the_console_names_the_credentials_file_aurora_dev_issued_you(nats_url: str, tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    mine = local_admin_file(dev, local_admin_name())
    mine.parent.mkdir(parents=True)
    mine.write_text("NATS_USER=someone\nNATS_PASSWORD=pwsomething\n", encoding="utf-8")
    mine.chmod(0o600)
    (dev / URL_FILE).write_text(nats_url, encoding="utf-8")  # the stack `aurora dev` started there
    process = ServiceProcess("aurora_cli.main", service_env(nats_url, AURORA_DEV_DATA_DIR=str(dev)), tmp_path,
                             "console", args=["console", "--port", "0"]).start()
    try:
        # The warning is the console's next line after its address: waited for, as the two are two writes.
        poll_sync(lambda: "asks for no credentials: anyone can sign in" in process.logs(), timeout=20,
                  what="the console's warning about this test's bare server")
        assert SERVING.search(process.logs())
        assert f"sign in there with your credentials file {mine}" in process.logs()
    finally:
        process.terminate(timeout=10)


def test_a_remote_host_is_refused_unless_allowed_and_a_missing_nats_is_one_line(cli: Cli) -> None:
    refused = cli("console", "--host", "0.0.0.0", "--port", "0")
    assert refused.returncode == 2 and "--allow-remote" in refused.stderr and "Traceback" not in refused.stderr
    unreachable = cli("console", "--port", "0", NATS_URL="nats://127.0.0.1:1")
    assert unreachable.returncode == 1 and "cannot reach NATS" in unreachable.stderr
    assert len(unreachable.stderr.strip().splitlines()) == 1


async def _sse(client: httpx.AsyncClient, wanted: int) -> list[tuple[str, str]]:
    """The first `wanted` (event, data) pairs of the console's event stream."""
    found: list[tuple[str, str]] = []
    name = ""
    async with client.stream("GET", "/events/stream") as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                name = line.split(":", 1)[1].strip()
            elif line.startswith("data:") and name:
                found.append((name, line.split(":", 1)[1].strip()))
                name = ""
                if len(found) == wanted:
                    return found
    return found


async def _publish(url: str, subjects: Subjects, message_id: str) -> None:
    async with nats_client(url) as nc:
        js = nc.jetstream()
        await ensure_stream(js, events_stream(subjects))
        await js.publish(subjects.event("test.app", "message.received"), json.dumps({
            "header": {"message_id": message_id, "timestamp": "2026-12-01T12:00:00+00:00",
                       "source": {"app": "test.app", "instance": "default"}},
            "payload": {"type": "message.received", "summary": "<b>hi</b>", "data": {}}}).encode())


async def test_live_events_are_streamed_and_the_console_reconnects_after_nats_restarts(
        console: tuple[str, str], broker: Broker, subjects: Subjects) -> None:
    url, host = console
    await _publish(broker.url, subjects, "m-1")
    async with httpx.AsyncClient(base_url=url, timeout=20) as client:
        assert (await sign_in(client, host)).status_code == 200
        # an event stored before the page opened comes first (the backlog), after `ready`
        pairs = await asyncio.wait_for(_sse(client, 2), 20)
        assert [name for name, _ in pairs] == ["ready", "amp"], pairs
        item = json.loads(pairs[1][1])
        assert (item["id"], item["type"], item["app"], item["detail"]) == (
            "m-1", "message.received", "test.app", "<b>hi</b>")

        broker.restart()  # the console's connection closes; the next request opens a new one

        async def answered_again() -> str | None:
            text = (await client.get("/part/approvals")).text
            return text if "no mcp-gateway is running" in text else None

        await poll(answered_again, timeout=20, what="the console to read through a new NATS connection")
        again = await asyncio.wait_for(_sse(client, 2), 20)
        assert [name for name, _ in again] == ["ready", "amp"] and json.loads(again[1][1])["id"] == "m-1"
