"""The chat page in a real browser (Debian's Chromium driven by Playwright) against the real stack:
nats-server, event-bridge, supervisor (running the chat app with its page, and the assets app),
gateway, router and a runner with deterministic playbook agents. What the person does on the page
becomes the app's real events; what the agents answer appears on the page."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nats
import pytest
from nats.aio.client import Client as NATS
from playwright.async_api import Browser, Page, expect

from services.runner.tasks.interactions import parse_interaction_id
from shared.contracts.subjects import Subjects
from tests.harness.browser import chromium, latin_only_fonts, missing_cjk_glyphs, require_chromium
from tests.harness.processes import ServiceProcess
from tests.harness.runner_stack import asset_chooser
from tests.harness.runs import (
    CHAT,
    RUNNER_ENV,
    apply,
    settled,
    stack_apps,
    stored_event,
)
from tests.harness.stack import StackBuilder
from tests.harness.tool_calls import operator_call
from tests.harness.waiting import poll_sync

SERVING = re.compile(r"chat page serving.*?(http://127\.0\.0\.1:\d+/)")
LIVE = 30_000  # ms: how long the page may take to show what the stack did (a loaded machine)

AGENTS: list[dict[str, Any]] = [
    {"kind": "Agent", "id": "page-echo", "agent_kind": "playbook", "events": ["message.received"],
     "playbook": {"answer": "echo: {{ event.data.text }}"}},
    asset_chooser("page-assets"),
    {"kind": "Agent", "id": "page-greeter", "agent_kind": "playbook", "events": ["group.member_joined"],
     "playbook": {"answer": "欢迎 {{ event.actor.id }} 加入！"}},
]


def _binding(binding_id: str, pattern: str, agent: str, session: str | None = None) -> dict[str, Any]:
    filters = [{"field": "source.app", "op": "eq", "value": CHAT}]
    if session is not None:
        filters.append({"field": "session_id", "op": "eq", "value": session})
    return {"kind": "Binding", "id": binding_id, "event_pattern": pattern, "filters": filters,
            "target_type": "agent", "target_id": agent, "priority": 10}


BINDINGS = [_binding("page-echo", "message.received", "page-echo", "group_echo"),
            _binding("page-assets", "message.received", "page-assets", "group_assets"),
            _binding("page-greeter", "group.member_joined", "page-greeter")]


@dataclass
class PageStack:
    nats_url: str
    page_url: str
    supervisor: ServiceProcess


@pytest.fixture(scope="module")
def page_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PageStack]:
    require_chromium()
    folder = tmp_path_factory.mktemp("chat-page")
    apps = stack_apps(folder / "chat-sent.jsonl")
    apps = {"chat": apps["chat"], "assets": apps["assets"]}
    apps["chat"]["mcp"]["env"]["CHAT_WEB_PORT"] = "0"  # any free port: read back from the log
    builder = StackBuilder(folder).apps(apps).bridge().supervisor().gateway().router().runners(1, **RUNNER_ENV)
    with builder.running() as stack:
        supervisor = stack["supervisor"]
        match = poll_sync(lambda: SERVING.search(supervisor.logs()), timeout=30, what="the chat page's address")
        yield PageStack(stack.url, match.group(1), supervisor)


@pytest.fixture
async def snc(page_stack: PageStack, subjects: Subjects) -> AsyncIterator[NATS]:
    client = await nats.connect(page_stack.nats_url)
    try:
        for document in [*AGENTS, *BINDINGS]:  # applying again changes nothing
            await apply(client, subjects, "agents" if document["kind"] == "Agent" else "bindings", document)
        yield client
    finally:
        await client.close()


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with chromium() as running:
        yield running


async def open_page(browser: Browser, stack: PageStack, conversation: str, user: str, lang: str = "en") -> Page:
    page = await browser.new_page()
    await page.goto(f"{stack.page_url}?c={conversation}&u={user}&lang={lang}")
    await expect(page.locator("#empty")).to_be_visible()  # the page rendered its (empty) view
    return page


async def say(page: Page, text: str) -> None:
    await page.locator("#text").fill(text)
    await page.locator("#send").click()
    await expect(page.locator("#text")).to_have_value("")  # accepted (202): the box is cleared


async def test_a_typed_message_gets_the_agents_answer_on_the_page(
        page_stack: PageStack, snc: NATS, browser: Browser) -> None:
    page = await open_page(browser, page_stack, "group_echo", "u1")
    await say(page, "hello aurora")
    await expect(page.locator("li.message.in .text")).to_have_text(["hello aurora"])
    await expect(page.locator("li.message.out .text")).to_have_text(["echo: hello aurora"], timeout=LIVE)
    assert await page.locator("#status").text_content() == ""


async def test_a_numbered_question_answered_on_the_page_resumes_the_task(
        page_stack: PageStack, snc: NATS, subjects: Subjects, browser: Browser) -> None:
    page = await open_page(browser, page_stack, "group_assets", "u7")
    await say(page, "where is the pump?")
    question = page.locator("li.message.out .question")
    await expect(question.locator("button.option")).to_have_text(
        ["1. Circulation pump P-101", "2. Circulation pump P-102"], timeout=LIVE)
    interaction_id = await question.get_attribute("data-interaction-id")
    parsed = parse_interaction_id(interaction_id or "")
    assert parsed is not None, interaction_id
    task_id = parsed[0]
    assert (await settled(snc, subjects, task_id))["state"] == "awaiting_approval"

    await question.locator("button.option", has_text="P-102").click()
    answer = page.locator("li.message.out:not(.asks) .text")
    await expect(answer).to_have_text([re.compile(r"AS-0002.*Hall 2, line 4")], timeout=LIVE)
    await expect(question.locator(".answer-state")).to_contain_text("answered “2” by u7")
    await expect(question.locator("button.option.chosen")).to_have_text("2. Circulation pump P-102")
    done = await settled(snc, subjects, task_id, states=("succeeded", "failed", "partial", "cancelled"))
    assert done["state"] == "succeeded", json.dumps(done)[:2000]
    pick = next(step for step in done["steps"] if step["id"] == "pick")
    assert pick["structured"]["choice"]["assetCode"] == "AS-0002" and "user u7" in pick["note"]


async def test_joining_the_group_and_a_friend_request_from_the_page(
        page_stack: PageStack, snc: NATS, subjects: Subjects, browser: Browser) -> None:
    page = await open_page(browser, page_stack, "group_lobby", "u42")
    await page.locator("#join").click()
    await expect(page.locator("li.notice.member-joined")).to_contain_text("u42 joined the group")
    await expect(page.locator("li.message.out .text")).to_have_text(["欢迎 u42 加入！"], timeout=LIVE)

    await page.locator("#note").fill("加个好友")
    await page.locator("#befriend").click()
    request = page.locator("li.notice.friend-request")
    await expect(request).to_contain_text("u42 sent a friend request (“加个好友”) — waiting for an answer")
    request_id = await request.get_attribute("data-request-id")
    assert request_id and request_id.startswith("fr-")
    def the_request(doc: dict[str, Any]) -> bool:
        payload = doc["payload"]
        return bool(payload["subject"] == {"kind": "friend_request", "id": request_id}
                    and payload["actor"] == {"id": "u42", "kind": "user"} and payload.get("session_id") is None)

    await stored_event(snc, subjects, CHAT, "friend.request_received", the_request)
    await operator_call(snc, subjects, f"{CHAT}.respond_friend_request",
                        {"request_id": request_id, "accept": True, "message": "好的"})
    await expect(request).to_contain_text("accepted: 好的")



async def test_the_page_in_chinese_is_readable_shows_no_ids_and_has_a_favicon(
        page_stack: PageStack, snc: NATS, browser: Browser, tmp_path: Path) -> None:
    """A screenshot of the page in Chinese, its characters drawn as glyphs (not boxes); the
    question shows no interaction id; the favicon is served."""
    page = await browser.new_page()  # the conversation may show earlier tests' messages
    await page.goto(f"{page_stack.page_url}?c=group_assets&u=u80&lang=zh-CN")
    await expect(page.locator("#send")).to_have_text("发送")
    await say(page, "泵在哪里？")
    question = page.locator("li.message.out .question").last
    await expect(question.locator(".answer-state")).to_have_text("等待回复", timeout=LIVE)
    interaction_id = await question.get_attribute("data-interaction-id")
    assert interaction_id and interaction_id not in (await page.locator("#timeline").inner_text())
    await page.screenshot(path=tmp_path / "chat-page.png", full_page=True)
    assert (tmp_path / "chat-page.png").stat().st_size > 0
    assert await missing_cjk_glyphs(page) is None
    icon = await page.locator("link[rel=icon]").get_attribute("href")
    served = await page.request.get(f"{page_stack.page_url.rstrip('/')}{icon}")
    assert served.status == 200 and served.headers["content-type"] == "image/svg+xml"
    assert (await served.text()).startswith("<svg")


async def test_without_a_cjk_font_the_check_sees_boxes(page_stack: PageStack, tmp_path: Path) -> None:
    """The readability check can fail: the same page in a browser that has only DejaVu (no CJK)."""
    async with chromium(fontconfig=latin_only_fonts(tmp_path / "fonts")) as bare:
        page = await open_page(bare, page_stack, "group_bare", "u81", lang="zh-CN")
        await expect(page.locator("#send")).to_have_text("发送")
        problem = await missing_cjk_glyphs(page)
    assert problem is not None and "missing-glyph box" in problem, problem


async def test_a_page_plays_one_user_and_cannot_take_one_another_page_plays(
        page_stack: PageStack, snc: NATS, browser: Browser) -> None:
    first = await open_page(browser, page_stack, "group_pair", "u61")
    await say(first, "u61 here")
    second = await browser.new_page()  # another browser: its own cookies
    await second.goto(f"{page_stack.page_url}?c=group_pair&u=u61")
    await expect(second.locator("#status")).to_contain_text("user 'u61' is signed in on another page")
    assert await second.evaluate("document.cookie") == ""  # HttpOnly: no script reads the session
    await second.locator("#user").fill("u62")
    await second.locator("#open").click()
    await expect(second.locator("#status")).to_have_text("")
    await say(second, "u62 here")
    # each message is shown as the user its page plays, on both pages
    for page in (first, second):
        await expect(page.locator("li.message.in .meta")).to_contain_text(["u61 ·", "u62 ·"], timeout=LIVE)
