"""The console's pure parts: every section escapes what it shows, live events become text
fields, a task's steps and history, and who may talk to the console."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from aurora_cli.console import views
from aurora_cli.console.guard import (
    RemoteRefused,
    allowed_hosts,
    check_bind,
    host_problem,
    is_loopback,
    origin_problem,
    token_problem,
)

EVIL = '<script>alert("x")</script>'
ESCAPED = "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"


def _task(**extra: Any) -> dict[str, Any]:
    return {"id": "t-1", "state": "succeeded", "target": {"type": "agent", "id": EVIL}, "binding_id": "b-1",
            "event_type": "message.received", "event_id": "e-1", "source_app": "im.x", "attempts": 1,
            "runner": "r-1", "delivery": {"reply_target": None}, "answer": EVIL,
            "steps": [{"id": "count", "kind": "tool", "name": EVIL, "status": "finished", "classification": "ok",
                       "arguments": {"key": EVIL}, "structured": {"count": 1}}],
            "transitions": [{"at": "2026-12-01T12:00:00.000+00:00", "to": "succeeded", "by": "runner",
                             "reason": EVIL}], **extra}


SECTIONS: list[tuple[str, Any]] = [
    ("approvals", [{"id": "apr-1", "tool": EVIL, "side_effect": "write", "arguments": {"a": EVIL}, "agent": EVIL,
                    "task_id": "t-1", "requested_at": "2026-12-01T12:00:00+00:00"}]),
    ("tasks", {"items": [{"id": "t-1", "state": "awaiting_approval", "target": {"type": "agent", "id": EVIL},
                          "event_type": EVIL, "error": EVIL}], "count": 1}),
    ("bindings", [{"id": EVIL, "event_pattern": "*", "filters": [{"field": "data.x", "op": "eq", "value": EVIL}],
                   "target_type": "agent", "target_id": EVIL, "priority": 1}]),
    ("apps", [{"app": EVIL, "instance": "default", "session": "connected", "last_error": EVIL}]),
    ("systems", [{"name": EVIL, "type": "http", "enabled": True, "last_error": EVIL}]),
    ("tools", [{"name": EVIL, "side_effect": "read", "description": EVIL,
                "input_schema": {"properties": {EVIL: {}}}}]),
    ("services", [{"name": EVIL, "core": False, "instances": 1, "versions": [EVIL], "uptime_s": 5.0,
                   "requests": 1, "errors": 0, "avg_ms": None, "last_error": EVIL}]),
]


@pytest.mark.parametrize(("name", "value"), SECTIONS, ids=[name for name, _ in SECTIONS])
def test_every_section_shows_untrusted_text_escaped(name: str, value: Any) -> None:
    html = str(views.part(name, value, None))
    assert "<script>" not in html and ESCAPED in html


@pytest.mark.parametrize("name", [name for name, _ in SECTIONS])
def test_a_section_whose_service_is_down_says_so_escaped(name: str) -> None:
    html = str(views.part(name, None, f"no router is running {EVIL}"))
    assert 'class="error"' in html and "no router is running" in html and "<script>" not in html


def test_pending_approvals_carry_their_id_on_the_grant_and_deny_buttons() -> None:
    html = str(views.part("approvals", SECTIONS[0][1], None))
    assert 'data-verb="grant" data-approval="apr-1"' in html and 'data-verb="deny" data-approval="apr-1"' in html
    assert 'href="/tasks/t-1"' in html
    assert "No approval is waiting" in str(views.part("approvals", [], None))


def test_a_task_shows_its_steps_and_history_escaped() -> None:
    html = str(views.task_part("t-1", _task(), None))
    assert "<script>" not in html and ESCAPED in html
    assert 'data-step-id="count" data-result="ok"' in html
    assert 'class="transition" data-state="succeeded"' in html
    assert "none (nothing is delivered)" in html
    missing = str(views.task_part("t-<b>", None, "no task 't-<b>'"))
    assert "t-&lt;b&gt;" in missing and "<b>" not in missing


def test_task_facts_leave_out_what_the_task_does_not_have() -> None:
    facts = dict(views.task_facts(_task(error={"code": "approval_denied", "message": "no"})))
    assert facts["error"] == "approval_denied: no" and "approval" not in facts and "session" not in facts


def test_a_dry_run_answer_names_the_binding_and_each_step() -> None:
    html = str(views.dry_run({"status": "dispatched", "binding_id": "b-1", "target": {"type": "agent", "id": "a"},
                              "steps": [{"binding_id": EVIL, "passed": False, "reason": "pattern",
                                         "checks": [{"check": "filter", "passed": False, "detail": EVIL}]}]}, None))
    assert 'id="dry-run-status">dispatched<' in html and 'id="dry-run-binding">b-1<' in html
    assert "agent/a" in html and "<script>" not in html and ESCAPED in html


def test_a_decision_says_who_decided() -> None:
    html = str(views.decision("apr-1", {"id": "apr-1", "state": "granted", "decided_by": "ann", "tool": "t",
                                        "arguments": {}}, None))
    assert "apr-1 granted by ann" in html
    refused = str(views.decision("apr-1", None, f"consumed: {EVIL}"))
    assert 'class="error"' in refused and "<script>" not in refused


def test_the_page_holds_the_token_who_is_signed_in_and_every_section() -> None:
    parts = {name: views.part(name, value, None) for name, value in SECTIONS}
    html = views.page(parts=parts, token="tok-123", person=EVIL, roles=("approver", "viewer"), roles_note=None,
                      nats_url="nats://x")
    assert '<meta name="console-token" content="tok-123">' in html
    assert "(approver, viewer)" in html and 'id="sign-out"' in html
    assert "<script>alert" not in html and ESCAPED in html
    for name, _ in SECTIONS:
        assert f'<section id="{name}" data-src="/part/{name}"' in html
    assert "<script " not in html.replace('<script src="/static/console.js" defer></script>', "")


def test_a_live_event_becomes_text_fields() -> None:
    data = json.dumps({"header": {"message_id": "m-1", "timestamp": "2026-12-01T12:00:01.5+00:00",
                                  "source": {"app": "im.x", "instance": "b"}},
                       "payload": {"type": "message.received", "data": {"text": EVIL}, "synthetic": True}}).encode()
    item = views.event_item("amp.evt.im_x.message.received", data)
    assert item["id"] == "m-1" and item["type"] == "message.received" and item["app"] == "im.x/b"
    assert item["time"] == "2026-12-01 12:00:01" and item["synthetic"] is True
    assert "<script>alert(" in item["detail"]  # raw text: the page sets it with textContent
    garbage = views.event_item("amp.evt.x", b"\xffnot json")
    assert garbage["type"] == "(not an AMP event)" and garbage["id"] == ""


def test_long_text_is_cut() -> None:
    assert views.short("x" * 100, 10) == "x" * 9 + "…"
    assert views.short({"a": 1}) == '{"a":1}' and views.short(None) == ""


# --------------------------------------------------------------------------- guard


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.1.2.3", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("0.0.0.0", False), ("::", False), ("192.168.1.5", False), ("example.com", False),
])
def test_only_loopback_is_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_a_remote_host_is_refused_without_allow_remote() -> None:
    with pytest.raises(RemoteRefused, match="--allow-remote"):
        check_bind("0.0.0.0", allow_remote=False)
    check_bind("0.0.0.0", allow_remote=True)
    check_bind("127.0.0.1", allow_remote=False)


def test_only_the_consoles_own_address_is_served() -> None:
    hosts = allowed_hosts("127.0.0.1", 8790)
    assert {"127.0.0.1:8790", "localhost:8790", "[::1]:8790"} <= hosts
    assert host_problem("127.0.0.1:8790", hosts) is None
    assert host_problem("evil.example:8790", hosts) is not None  # DNS rebinding
    assert host_problem("127.0.0.1:9999", hosts) is not None
    assert host_problem(None, hosts) is not None
    assert host_problem("anything", None) is None  # --allow-remote


def test_the_sign_in_page_holds_no_token_and_no_section() -> None:
    html = views.sign_in_page(nats_url="nats://x")
    assert 'id="sign-in-form"' in html and "not signed in" in html
    assert "console-token" not in html and "data-src" not in html and 'id="sign-out"' not in html


def test_a_post_comes_from_the_consoles_own_page_as_json() -> None:
    host, json_type = "127.0.0.1:8790", "application/json"
    assert origin_problem(origin=f"http://{host}", host_header=host, content_type=json_type) is None
    assert origin_problem(origin=f"http://{host}", host_header=host, content_type="application/json; charset=utf-8") \
        is None
    assert "without an Origin" in str(origin_problem(origin=None, host_header=host, content_type=json_type))
    assert "Origin" in str(origin_problem(origin="http://evil.example", host_header=host, content_type=json_type))
    assert "JSON" in str(origin_problem(origin=f"http://{host}", host_header=host,
                                        content_type="application/x-www-form-urlencoded"))


def test_a_post_needs_its_sessions_token() -> None:
    assert token_problem("t", "t") is None
    assert "not signed in" in str(token_problem("t", None))
    assert "token" in str(token_problem(None, "t"))
    assert "token" in str(token_problem("u", "t"))


def test_the_page_loads_nothing_from_elsewhere() -> None:
    """Offline: no CDN, no font or script from another host, in any template, script or style."""
    folder = Path(views.__file__).parent
    files = [*folder.joinpath("templates").iterdir(), *folder.joinpath("static").iterdir()]
    assert len(files) > 5
    for path in files:
        # SVG's namespace is a name, not something fetched (the favicon)
        text = path.read_text(encoding="utf-8").replace('xmlns="http://www.w3.org/2000/svg"', "")
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text, re.I), path
        assert "@import" not in text and "<script>" not in text, path  # no inline script (the CSP forbids it)


def test_systems_show_when_each_http_system_was_last_probed() -> None:
    just_now = datetime.now(UTC).isoformat()
    html = str(views.part("systems", [
        {"name": "assets", "type": "http", "enabled": True, "health": "up", "circuit": "closed",
         "probe": "GET /healthz every 15s", "last_probe": just_now},
        {"name": "crm", "type": "http", "enabled": True, "health": "unknown", "circuit": "closed", "probe": None},
        {"name": "im.polaris.qq", "type": "mcp", "enabled": True, "health": "connected", "tools": 9},
    ], None))
    rows = {row.split('"')[0]: row for row in html.split('data-system="')[1:]}
    assert "<td>0s ago</td>" in rows["assets"] or "<td>1s ago</td>" in rows["assets"], rows["assets"]
    assert "<td>off</td>" in rows["crm"]
    assert "<td>closed</td>" not in rows["im.polaris.qq"] and "<td>-</td>" in rows["im.polaris.qq"]


def test_a_finished_task_shows_how_long_it_and_each_step_took() -> None:
    task = _task(state="succeeded", steps=[{
        "id": "count", "kind": "tool", "name": "echo.counter", "status": "finished", "classification": "ok",
        "started_at": "2026-12-01T12:00:00.010+00:00", "finished_at": "2026-12-01T12:00:00.052+00:00"}],
        transitions=[{"at": "2026-12-01T12:00:00.000+00:00", "to": "queued", "by": "r-1"},
                     {"at": "2026-12-01T12:00:00.061+00:00", "to": "succeeded", "by": "r-1"}])
    html = str(views.task_part("t-1", task, None))
    assert '<td>ok</td><td class="took">42 ms</td>' in html
    assert ("took", "61 ms") in views.task_facts(task)
