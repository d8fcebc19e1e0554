"""`aurora console` in a real browser (Debian's Chromium driven by Playwright) against the real stack
on a secured nats-server (deploy/nats-auth.conf with people in it): event-bridge, supervisor (the
echo app), gateway, router, a runner, each as its own NATS user, and the console process itself,
which holds no credentials of its own.

Nothing shows until a person signs in; the page then acts as that person over their own NATS
connection. An approver's grant resumes the waiting task and the approval, its audit record and
its event name that approver; a viewer's grant is refused with the gateway's reason; a plain
request without the session (another process, another site) gets no token and decides nothing;
a wrong password signs nobody in; sign-out closes the person's connection."""

from __future__ import annotations

import asyncio
import json
import os
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from nats.aio.client import Client as NATS
from playwright.async_api import Browser, Page, Route, expect

from aurora_cli.devstack import AUTH_CONFIG, Credentials
from aurora_cli.localnats import LocalNats, free_port
from aurora_cli.people import PeopleStore, write_auth_config
from shared.config.settings import inbox_prefix_for
from shared.contracts.signals import GATEWAY_APP
from shared.contracts.subjects import Subjects
from shared.nats.admin_service import admin_request
from tests.harness.browser import chromium, missing_cjk_glyphs, require_chromium
from tests.harness.clients import nats_client
from tests.harness.processes import REPO, ServiceProcess, service_env
from tests.harness.runs import (
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
)
from tests.harness.stack import FOLDER_KINDS, StackBuilder
from tests.harness.waiting import poll, poll_sync

SERVING = re.compile(r"console serving (http://127\.0\.0\.1:\d+/)")
LIVE = 30_000  # ms: how long the page may take to show what the stack did (a loaded machine)
FINAL = ("succeeded", "failed", "unverified", "partial", "cancelled")
HOSTILE = "<img src=x id=pwned onerror=alert(1)>"
TOKEN = re.compile(r'<meta name="console-token" content="([^"]+)">')
# name → roles: in the server's config (their own NATS users) and in the gateway's users registry
PEOPLE = {"amy": ["approver"], "vera": ["viewer"]}
SERVICES = ("event_bridge", "app_supervisor", "mcp_gateway", "router", "runner")


@dataclass
class ConsoleStack:
    nats_url: str
    console_url: str
    console: ServiceProcess
    credentials: Credentials  # the platform's identities (the tests set up as `operator`)
    people: PeopleStore
    passwords: dict[str, str]
    monitor_url: str  # nats-server's monitoring (connz: who is connected)
    log_folder: Path  # the stack's logs and nats-server's, shown by a failed test's report

    def creds_file(self, name: str) -> Path:
        return self.people.credentials_file(name)


def secured_server(folder: Path, people: PeopleStore, credentials: Credentials) -> tuple[LocalNats, str]:
    """nats-server on deploy/nats-auth.conf with the people in it, and its monitoring port."""
    write_auth_config(REPO / AUTH_CONFIG, folder / "nats-auth.conf", people)
    monitor = free_port()
    config = folder / "nats.conf"
    config.write_text(f'include "nats-auth.conf"\nhttp: "127.0.0.1:{monitor}"\n', encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AURORA_NATS_")}
    env.update(credentials.server_env())
    server = LocalNats(folder / "jetstream", log_file=folder / "nats-server.log", config_file=config, env=env)
    server.start()
    return server, f"http://127.0.0.1:{monitor}"


def as_operator(stack: ConsoleStack) -> dict[str, str]:
    return {"user": "operator", "password": stack.credentials.passwords["operator"],
            "inbox_prefix": inbox_prefix_for("operator")}


@pytest.fixture(scope="module")
def console_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConsoleStack]:
    require_chromium()
    folder = tmp_path_factory.mktemp("console")
    credentials = Credentials.generate()
    people = PeopleStore(folder / "creds")
    passwords = {name: people.issue(name, roles, cost=4)[1] for name, roles in PEOPLE.items()}
    server, monitor_url = secured_server(folder, people, credentials)
    builder = StackBuilder(folder).broker(server.url, credentials).apps(
        {"echo": stack_apps(folder / "chat-sent.jsonl")["echo"]})
    for name in SERVICES:  # each as its own NATS user
        builder.service(FOLDER_KINDS[name], name, **(RUNNER_ENV if name == "runner" else {}))
    try:
        with builder.running() as running:
            # no NATS credentials: the console has no identity of its own, only its people's
            console = ServiceProcess("aurora_cli.main", service_env(server.url), folder / "logs", "console",
                                     args=["console", "--port", "0"]).start()
            try:
                match = poll_sync(lambda: SERVING.search(console.logs()), timeout=30, what="the console's address")
                stack = ConsoleStack(running.url, match.group(1), console, credentials, people, passwords,
                                     monitor_url, folder)
                asyncio.run(register_people(stack))
                yield stack
            finally:
                console.terminate()
    finally:
        server.stop()


async def register_people(stack: ConsoleStack) -> None:
    """The gateway's users registry: where it checks each person's roles at every request."""
    async with nats_client(stack.nats_url, **as_operator(stack)) as nc:
        for name, roles in PEOPLE.items():
            await admin_request(nc, Subjects("amp"), "users", "add", {"name": name, "roles": roles}, timeout=10)


@pytest.fixture
async def cnc(console_stack: ConsoleStack) -> AsyncIterator[NATS]:
    """The installation's `operator` identity: what the tests set up and check with."""
    async with nats_client(console_stack.nats_url, **as_operator(console_stack)) as client:
        yield client


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as running:
        yield running


async def sign_in_with_file(page: Page, stack: ConsoleStack, name: str) -> None:
    await page.goto(stack.console_url)
    await page.locator("#sign-in-file").set_input_files(str(stack.creds_file(name)))
    await page.locator("#sign-in-submit").click()
    await expect(page.locator("#person")).to_have_text(name, timeout=LIVE)


async def open_console(browser: Browser, stack: ConsoleStack, name: str = "amy") -> Page:
    page = await browser.new_page()
    await sign_in_with_file(page, stack, name)
    # the page subscribed to the events: from now on no event is missed
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


async def approval_state(nc: NATS, approval_id: str) -> str:
    return str((await admin_request(nc, Subjects("amp"), "approvals", "get", {"id": approval_id}))["state"])


async def audit_records(nc: NATS, approval_id: str) -> list[dict[str, Any]] | None:
    """The audit's records of decisions on `approval_id` (None while there is none)."""
    js = nc.jetstream(timeout=5)
    info = await js.stream_info("AMP_AUDIT")
    records = []
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        record = json.loads((await js.get_msg("AMP_AUDIT", seq)).data or b"{}")
        if record.get("approval_id") == approval_id and str(record.get("status")).startswith("approval_"):
            records.append(record)
    return records or None


async def test_an_approver_signed_in_grants_and_the_decision_names_them(
        console_stack: ConsoleStack, cnc: NATS, subjects: Subjects, browser: Browser) -> None:
    page = await open_console(browser, console_stack, "amy")
    await expect(page.locator("#roles")).to_have_text("(approver)")
    case = f"cs-{uuid.uuid4().hex[:6]}"
    task_id, message_id, waiting = await waiting_write(cnc, subjects, case)
    approval_id = str(waiting["approval_id"])

    # the event that started it appeared live, its markup shown as text
    live = page.locator(f'#event-list li[data-id="{message_id}"]')
    await expect(live.locator(".type")).to_have_text("message.received", timeout=LIVE)
    await expect(live.locator(".detail")).to_contain_text(HOSTILE)
    assert await page.locator("#pwned").count() == 0

    row = page.locator(f'tr.approval[data-approval-id="{approval_id}"]')
    await expect(row).to_contain_text(f"{ECHO}.counter_increment", timeout=LIVE)
    await expect(page.locator(f'tr.task[data-task-id="{task_id}"]')).to_have_attribute(
        "data-state", "awaiting_approval", timeout=LIVE)
    await row.locator("input.note").fill("fine from the console")
    await row.locator("button.grant").click()
    me = "amy"  # the person signed in, as nats-server authenticated her: not the OS user, not `operator`
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
    # and the audit names her as the person who decided
    records = await poll(lambda: audit_records(cnc, approval_id), timeout=15, what="the grant's audit record")
    assert [(r["caller"], r["status"]) for r in records] == [(f"person:{me}", "approval_granted")], records

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


async def test_a_viewer_signed_in_is_refused_a_grant_and_told_why(
        console_stack: ConsoleStack, cnc: NATS, subjects: Subjects, browser: Browser) -> None:
    page = await browser.new_page()
    await page.goto(console_stack.console_url)
    await page.locator("#sign-in-name").fill("vera")
    await page.locator("#sign-in-password").fill(console_stack.passwords["vera"])
    await page.locator("#sign-in-submit").click()
    await expect(page.locator("#person")).to_have_text("vera", timeout=LIVE)
    await expect(page.locator("#roles")).to_have_text("(viewer)")
    # what a viewer may read shows (the apps bucket read without a consumer, which a person may
    # not create); what only an admin may ask says so
    await expect(page.locator(f'#apps tr.app[data-app="{ECHO}"]')).to_be_visible(timeout=LIVE)
    await expect(page.locator("#services .error")).to_contain_text("($SRV.STATS) is for the admin role")

    _, _, waiting = await waiting_write(cnc, subjects, f"cv-{uuid.uuid4().hex[:6]}")
    approval_id = str(waiting["approval_id"])
    row = page.locator(f'tr.approval[data-approval-id="{approval_id}"]')
    await expect(row).to_contain_text(f"{ECHO}.counter_increment", timeout=LIVE)  # a viewer reads it
    await row.locator("button.grant").click()
    await expect(page.locator("#status")).to_contain_text(
        f"{approval_id}: not_permitted: vera (viewer) may not approvals.grant", timeout=LIVE)
    await expect(page.locator("#status")).to_have_class("error")
    assert await approval_state(cnc, approval_id) == "pending"


async def test_without_the_session_there_is_no_token_and_nothing_is_decided(
        console_stack: ConsoleStack, cnc: NATS, subjects: Subjects, browser: Browser) -> None:
    """Another local process, or another site's page, has the console's address but not the
    signed-in person's cookie: what it fetches holds no token, and what it posts decides nothing."""
    page = await open_console(browser, console_stack, "amy")  # someone is signed in meanwhile
    _, _, waiting = await waiting_write(cnc, subjects, f"cx-{uuid.uuid4().hex[:6]}")
    approval_id = str(waiting["approval_id"])
    await expect(page.locator(f'tr.approval[data-approval-id="{approval_id}"]')).to_be_visible(timeout=LIVE)
    signed_in_token = TOKEN.search(await page.content())
    assert signed_in_token  # the signed-in page has one: a stranger must not

    origin = console_stack.console_url.rstrip("/")
    async with httpx.AsyncClient(base_url=console_stack.console_url, timeout=20) as stranger:
        front = await stranger.get("/")
        assert front.status_code == 200 and 'id="sign-in-form"' in front.text  # answered: the sign-in form
        assert not TOKEN.search(front.text) and approval_id not in front.text
        assert (await stranger.get("/part/approvals")).status_code == 401
        grant = f"/approvals/{approval_id}/grant"
        forged = {"origin": origin, "x-aurora-console-token": signed_in_token.group(1)}  # even with the token
        assert (await stranger.post(grant, json={"note": "x"}, headers=forged)).status_code == 401
        assert (await stranger.post(grant, json={"note": "x"})).status_code == 401
        # another site's form: no session, no JSON, no Origin of the console's
        form = await stranger.post(grant, content=b"note=x", headers={
            "content-type": "application/x-www-form-urlencoded", "origin": "http://evil.example"})
        assert form.status_code == 401
    assert await approval_state(cnc, approval_id) == "pending"


async def test_a_wrong_password_or_a_platform_identity_signs_nobody_in(
        console_stack: ConsoleStack, browser: Browser) -> None:
    # the server asks for credentials, so the console does not warn that anyone could sign in
    # (the warning comes right after the address line, which the fixture waited for)
    assert "asks for no credentials" not in console_stack.console.logs()
    page = await browser.new_page()
    await page.goto(console_stack.console_url)
    await page.locator("#sign-in-name").fill("amy")
    await page.locator("#sign-in-password").fill(console_stack.passwords["amy"] + "x")
    await page.locator("#sign-in-submit").click()
    await expect(page.locator("#sign-in-error")).to_contain_text(
        "sign-in refused: NATS did not accept the password for 'amy'", timeout=LIVE)
    assert not [c for c in await page.context.cookies() if c["name"] == "aurora_console_session"]

    await page.locator("#sign-in-name").fill("operator")  # the shared identity, with its right password
    await page.locator("#sign-in-password").fill(console_stack.credentials.passwords["operator"])
    await page.locator("#sign-in-submit").click()
    await expect(page.locator("#sign-in-error")).to_contain_text("'operator' is a platform identity, not a person")
    await page.reload()
    await expect(page.locator("#sign-in-form")).to_be_visible()
    assert await page.locator("#person").count() == 0


async def console_connections(stack: ConsoleStack, name: str) -> set[int]:
    """The ids of nats-server's open connections that the console holds for `name`."""
    async with httpx.AsyncClient(timeout=10) as client:
        connz = (await client.get(f"{stack.monitor_url}/connz", params={"auth": "true", "limit": 1024})).json()
    return {int(c["cid"]) for c in connz.get("connections") or []
            if c.get("authorized_user") == name and c.get("name") == f"aurora-console:{name}"}


async def test_sign_out_closes_the_persons_connection(console_stack: ConsoleStack, browser: Browser) -> None:
    before = await console_connections(console_stack, "vera")  # other tests' sessions, still signed in
    page = await open_console(browser, console_stack, "vera")

    async def opened() -> set[int]:
        return await console_connections(console_stack, "vera") - before

    mine = await poll(opened, timeout=15, what="vera's new console connection")
    await page.locator("#sign-out").click()
    await expect(page.locator("#sign-in-form")).to_be_visible(timeout=LIVE)

    async def closed() -> bool:
        return not mine & await console_connections(console_stack, "vera")

    await poll(closed, timeout=15, what="vera's console connection to close")
    assert (await page.request.get(f"{console_stack.console_url}part/approvals")).status == 401


async def test_the_console_shows_chinese_as_glyphs_and_has_a_favicon(
        console_stack: ConsoleStack, cnc: NATS, subjects: Subjects, browser: Browser, tmp_path: Path) -> None:
    """A task whose step carries Chinese, on its page: a screenshot, its characters drawn as glyphs
    (not boxes, tests/harness/browser.py); the favicon is served to anyone (a static file)."""
    case = f"zh-{uuid.uuid4().hex[:6]}"
    await apply(cnc, subjects, "agents", {
        "kind": "Agent", "id": f"a-{case}", "agent_kind": "playbook", "events": ["message.received"],
        "tools": [f"{ECHO}.echo"],
        "playbook": {"steps": [{"id": "look", "tool": f"{ECHO}.echo", "arguments": {"key": f"设备告警 {case}"}}],
                     "answer": "已记录"}})
    await bind(cnc, subjects, f"b-{case}", "message.received", "agent", f"a-{case}", case=case)
    doc = event("message.received", {"case": case, "text": "设备告警"}, app=ECHO, subject_message=False)
    await publish_events(cnc.jetstream(), subjects, [doc])
    task_id = task_id_of(doc, f"b-{case}")
    assert (await settled(cnc, subjects, task_id, timeout=40))["state"] == "succeeded"
    page = await open_console(browser, console_stack)
    await page.goto(f"{console_stack.console_url.rstrip('/')}/tasks/{task_id}")
    await expect(page.locator("#steps")).to_contain_text(f"设备告警 {case}", timeout=LIVE)
    await page.screenshot(path=tmp_path / "console-task.png", full_page=True)
    assert (tmp_path / "console-task.png").stat().st_size > 0
    assert await missing_cjk_glyphs(page) is None
    icon = await page.locator("link[rel=icon]").get_attribute("href")
    async with httpx.AsyncClient(timeout=10) as client:  # no session needed
        served = await client.get(f"{console_stack.console_url.rstrip('/')}{icon}")
    assert served.status_code == 200 and served.headers["content-type"] == "image/svg+xml"
    assert served.text.startswith("<svg")
