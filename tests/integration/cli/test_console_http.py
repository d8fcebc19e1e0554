"""`aurora console` over HTTP against a bare nats-server (no Aurora service running): who it
refuses, the security headers, and sections that say which service does not answer."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.harness.processes import ServiceProcess, service_env
from tests.harness.waiting import poll_sync
from tests.integration.cli.conftest import Cli

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


def test_pages_are_served_with_their_guards_and_say_what_does_not_answer(console: tuple[str, str]) -> None:
    url, host = console
    with httpx.Client(base_url=url, timeout=20) as client:
        page = client.get("/")
        assert page.status_code == 200
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY"
        assert "no mcp-gateway is running (nobody answers amp.admin.approvals.list)" in page.text
        assert "no runner is running (nobody answers amp.admin.tasks.list)" in page.text
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


def test_a_remote_host_is_refused_unless_allowed_and_a_missing_nats_is_one_line(cli: Cli) -> None:
    refused = cli("console", "--host", "0.0.0.0", "--port", "0")
    assert refused.returncode == 2 and "--allow-remote" in refused.stderr and "Traceback" not in refused.stderr
    unreachable = cli("console", "--port", "0", NATS_URL="nats://127.0.0.1:1")
    assert unreachable.returncode == 1 and "cannot connect to NATS" in unreachable.stderr
    assert len(unreachable.stderr.strip().splitlines()) == 1
