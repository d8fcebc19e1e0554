"""`aurora console` in a real browser (Debian's Chromium driven by Playwright) against the real stack:
nats-server, event-bridge, supervisor (the echo app), gateway, router, a runner and the console
process itself. A playbook's write waits for approval; the page shows the waiting approval and
the live events, the grant clicked on the page resumes the task (on the page and in the task
store), and the decision is recorded as the operator's."""

from __future__ import annotations

import asyncio
import json
import re
import urllib.error
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from nats.aio.client import Client as NATS
from playwright.async_api import Browser, Page, Route, expect

from aurora_cli.localnats import LocalNats
from shared.admin import admin_request
from shared.contracts.signals import GATEWAY_APP
from shared.subjects import Subjects
from tests.harness.browser import chromium, require_chromium
from tests.harness.clients import nats_client
from tests.harness.processes import ServiceProcess, service_env, stop_services
from tests.harness.waiting import poll_sync
from tests.integration.runner.helpers import (
    ECHO,
    RUNNER_ENV,
    apply,
    bind,
    event,
    publish_events,
    settled,
    stack_apps,
    stored_event,
    task_id_of,
    write_apps,
)

SERVING = re.compile(r"console serving (http://127\.0\.0\.1:\d+/)")
LIVE = 30_000  # ms: how long the page may take to show what the stack did (a loaded machine)
FINAL = ("succeeded", "failed", "unverified", "partial", "cancelled")
HOSTILE = "<img src=x id=pwned onerror=alert(1)>"


@dataclass
class ConsoleStack:
    nats_url: str
    console_url: str
    console: ServiceProcess
    log_folder: Path  # the stack's logs and nats-server's, shown by a failed test's report


@pytest.fixture(scope="module")
def console_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleStack]:
    require_chromium()
    folder = tmp_path_factory.mktemp("console")
    server = LocalNats(folder / "jetstream", log_file=folder / "nats-server.log")
    server.start()
    apps = {"echo": stack_apps(folder / "chat-sent.jsonl")["echo"]}
    env = service_env(server.url, AURORA_APPS_CONFIG=str(write_apps(folder, apps)))
    logs = folder / "logs"
    logs.mkdir()
    processes = {name: ServiceProcess(f"services.{module}", env, logs, name).start() for name, module in [
        ("bridge", "event_bridge"), ("supervisor", "app_supervisor"), ("gateway", "mcp_gateway"),
        ("router", "router")]}
    processes["runner"] = ServiceProcess("services.runner", {**env, **RUNNER_ENV}, logs, "runner").start()
    console = ServiceProcess("aurora_cli.main", env, logs, "console", args=["console", "--port", "0"]).start()
    try:
        processes["gateway"].wait_for_log('"serving"', timeout=60)
        processes["runner"].wait_for_log('"ready"', timeout=40)
        processes["router"].wait_for_log('"ready"', timeout=40)
        match = poll_sync(lambda: SERVING.search(console.logs()), timeout=30, what="the console's address")
        yield ConsoleStack(server.url, match.group(1), console, folder)
    finally:
        stop_services([console, *processes.values()])
        server.stop()


@pytest.fixture
async def cnc(console_stack: ConsoleStack) -> AsyncIterator[NATS]:
    async with nats_client(console_stack.nats_url) as client:
        yield client


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as running:
        yield running


async def open_console(browser: Browser, stack: ConsoleStack) -> Page:
    page = await browser.new_page()
    await page.goto(stack.console_url)
    # the page subscribed to the events stream: from now on no event is missed
    await expect(page.locator("#live")).to_have_attribute("data-state", "open", timeout=LIVE)
    return page


async def waiting_write(nc: NATS, subjects: Subjects, case: str) -> tuple[str, str, dict[str, object]]:
    """A playbook that reads, then increments the echo counter `case` (a write): its task waits.
    The event's text is markup, which the page must show as text."""
    await apply(nc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["message.received"],
        "tools": [f"{ECHO}.echo", f"{ECHO}.counter_increment"],
        "playbook": {"steps": [
            {"id": "look", "tool": f"{ECHO}.echo", "arguments": {"key": case}},
            {"id": "count", "tool": f"{ECHO}.counter_increment",
             "arguments": {"key": "{{ steps.look.structured.key }}"}},
        ], "answer": "counted: {{ steps.count.structured.count }}"}})
    await bind(nc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    # no session, conversation or subject: nothing to reply to, so the answer is the whole outcome
    doc = event("message.received", {"case": case, "text": HOSTILE}, app=ECHO, subject_message=False)
    await publish_events(nc.jetstream(), subjects, [doc])
    task_id = task_id_of(doc, f"b-{case}")
    waiting = await settled(nc, subjects, task_id, timeout=40)
    assert waiting["state"] == "awaiting_approval" and waiting["approval_id"], json.dumps(waiting)[:3000]
    return task_id, str(doc["header"]["message_id"]), waiting


def post_without_token(url: str) -> int:
    """A POST as another site's page could send it: a form body, no console token."""
    request = urllib.request.Request(url, data=b"note=x", method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


async def test_an_approval_granted_on_the_page_resumes_its_task(
        console_stack: ConsoleStack, cnc: NATS, subjects: Subjects, browser: Browser) -> None:
    page = await open_console(browser, console_stack)
    case = f"cs-{uuid.uuid4().hex[:6]}"
    task_id, message_id, waiting = await waiting_write(cnc, subjects, case)
    approval_id = str(waiting["approval_id"])

    # the event that started it appeared live, its markup shown as text
    live = page.locator(f'#event-list li[data-id="{message_id}"]')
    await expect(live.locator(".type")).to_have_text("message.received", timeout=LIVE)
    await expect(live.locator(".detail")).to_contain_text(HOSTILE)
    assert await page.locator("#pwned").count() == 0

    # a cross-site POST is refused and decides nothing
    assert post_without_token(f"{console_stack.console_url}approvals/{approval_id}/grant") == 403

    row = page.locator(f'tr.approval[data-approval-id="{approval_id}"]')
    await expect(row).to_contain_text(f"{ECHO}.counter_increment", timeout=LIVE)
    await expect(page.locator(f'tr.task[data-task-id="{task_id}"]')).to_have_attribute(
        "data-state", "awaiting_approval", timeout=LIVE)
    await row.locator("input.note").fill("fine from the console")
    await row.locator("button.grant").click()
    me = "operator"  # the console's credentials' identity (here the plain `operator`), not the OS user
    await expect(page.locator("#status")).to_contain_text(f"{approval_id} granted by {me}")

    done = await settled(cnc, subjects, task_id, timeout=40, states=FINAL)
    assert done["state"] == "succeeded" and done["answer"] == "counted: 1", json.dumps(done)[:3000]
    await expect(page.locator(f'tr.task[data-task-id="{task_id}"]')).to_have_attribute(
        "data-state", "succeeded", timeout=LIVE)
    await expect(row).to_have_count(0)
    decided = [t for t in done["transitions"] if f"approval {approval_id} granted by {me}" in (t["reason"] or "")]
    assert decided and "fine from the console" in decided[0]["reason"], done["transitions"]
    approval = await admin_request(cnc, subjects, "approvals", "get", {"id": approval_id})
    assert approval["decided_by"] == me and approval["state"] in ("granted", "consumed"), approval
    # the decision's event names the operator, in the events stream and live on the page
    await stored_event(cnc, subjects, GATEWAY_APP, "approval.granted",
                       lambda doc: doc["payload"]["data"]["id"] == approval_id
                       and doc["payload"]["data"]["decided_by"] == me)
    await expect(page.locator('#event-list li[data-type="approval.granted"] .detail')).to_contain_text(
        f"{ECHO}.counter_increment granted by {me}")

    # the task's own page: its steps and history
    await page.locator(f'tr.task[data-task-id="{task_id}"] a').click()
    await expect(page.locator("#task-state")).to_have_text("succeeded")
    await expect(page.locator('#steps tr.step[data-step-id="count"]')).to_have_attribute("data-result", "ok")
    await expect(page.locator("#history tr.transition").last).to_have_attribute("data-state", "succeeded")


async def test_a_note_typed_on_an_approval_outlives_the_sections_refreshes(
        console_stack: ConsoleStack, cnc: NATS, subjects: Subjects, browser: Browser) -> None:
    """The approvals section refreshes every few seconds. A refresh already fetching when the
    operator began to type replaced the row under their hands, and the grant went out without
    the note (seen as a flaky grant here); a note left typed on a row must outlive refreshes too."""
    page = await open_console(browser, console_stack)
    _, _, waiting = await waiting_write(cnc, subjects, f"cn-{uuid.uuid4().hex[:6]}")
    approval_id = str(waiting["approval_id"])
    row = page.locator(f'tr.approval[data-approval-id="{approval_id}"]')
    note = row.locator("input.note")
    await expect(note).to_be_visible(timeout=LIVE)

    fetching, answer = asyncio.Event(), asyncio.Event()

    async def held(route: Route) -> None:  # the section's fetch answers only once the note is typed
        fetching.set()
        await answer.wait()
        await route.continue_()

    await page.route("**/part/approvals", held)
    refreshing = asyncio.ensure_future(page.evaluate("() => refresh(document.getElementById('approvals'))"))
    await asyncio.wait_for(fetching.wait(), 10)
    await note.fill("typed during a refresh")
    answer.set()
    await asyncio.wait_for(refreshing, 10)  # this refresh has done all it will
    assert await note.input_value() == "typed during a refresh"
    await page.unroute("**/part/approvals", held)

    await note.blur()  # left typed on the row, not being typed: the next refresh replaces the row
    await row.evaluate("row => { row.dataset.before = 'yes'; }")
    await page.evaluate("() => refresh(document.getElementById('approvals'))")
    await expect(row).not_to_have_attribute("data-before", "yes")  # a new row from the server
    assert await note.input_value() == "typed during a refresh"

    await row.locator("button.deny").click()
    await expect(page.locator("#status")).to_contain_text(f"{approval_id} denied")
    approval = await admin_request(cnc, subjects, "approvals", "get", {"id": approval_id})
    assert approval["state"] == "denied" and "typed during a refresh" in str(approval), approval


async def test_a_dry_run_from_the_page_names_the_binding(
        console_stack: ConsoleStack, cnc: NATS, subjects: Subjects, browser: Browser) -> None:
    case = f"dr-{uuid.uuid4().hex[:6]}"
    await apply(cnc, subjects, "agents", {"kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook",
                                          "events": ["message.received"], "playbook": {"answer": "hi"}})
    await bind(cnc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    page = await open_console(browser, console_stack)
    await expect(page.locator(f'#bindings tr.binding[data-binding-id="b-{case}"]')).to_contain_text(
        f"agent/a-{case}", timeout=LIVE)
    await page.locator("#dry-run-event").fill(json.dumps({"type": "message.received", "data": {"case": case}}))
    await page.locator("#dry-run-submit").click()
    await expect(page.locator("#dry-run-status")).to_have_text("dispatched", timeout=LIVE)
    await expect(page.locator("#dry-run-binding")).to_have_text(f"b-{case}")
    await expect(page.locator("#dry-run-note")).to_contain_text("the dry run used app aurora.cli")

    await page.locator("#dry-run-event").fill("{not json")
    await page.locator("#dry-run-submit").click()
    await expect(page.locator("#dry-run-result .error")).to_contain_text("the event is not JSON")
