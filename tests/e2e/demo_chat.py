"""The demo scenarios' view of a running compose stack: the chat page's two endpoints as its
JavaScript uses them, the task records the CLI shows, and which agents run the scenarios."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.e2e.compose_stack import ComposeStack
from tests.harness.chat_webhook import PageUsers
from tests.harness.processes import REPO
from tests.harness.waiting import poll_sync

LLM_DIR = REPO / "deploy" / "demo" / "llm"
# What the platform's sentences must not carry: ids (approvals', interactions', elicitations',
# tasks' and runs' — they stay in the console and the CLI) and JSON.
IDS = re.compile(r"\b(apr|ix|eli)\.|\bapr-|\{|\}")
CJK = re.compile(r"[\u4e00-\u9fff]")
# Each shipped language's words for the approval's answers and the question's hint
LANGUAGE = {
    "zh-CN": {"options": ["允许", "拒绝"], "wants": "请求调用", "hint": "（请回复选项编号）", "unverified": "无法确认"},
    "en": {"options": ["allow", "refuse"], "wants": "wants to call", "hint": "(answer with the number of your choice)",
           "unverified": "I cannot confirm"},
}


@dataclass(frozen=True)
class Variant:
    """Who runs the scenarios: the playbooks of deploy/demo/, or the llm agents of deploy/demo/llm/."""

    name: str
    relay: str
    rules: str
    greeter: str
    friend: str
    # The rules each variant adds to P-101 (the industrial system keeps every rule for the
    # module's one stack, so the variants must not ask for the same rule — its key would be found).
    thresholds: tuple[str, str, str]


PLAYBOOK = Variant("playbook", "relay-desk", "rule-desk", "greeter", "friend-desk", ("91", "92", "8.5"))
LLM = Variant("llm", "relay-llm", "rule-llm", "greeter-llm", "friend-llm", ("81", "82", "7.5"))


class Modes:
    """Switches the one stack between the variants: the llm profile's `demo-init-llm` (its command
    from compose.yaml) hands the scenarios to the llm agents; the playbooks get them back when
    the llm bindings are applied again disabled."""

    def __init__(self, stack: ComposeStack, folder: Path) -> None:
        self.stack = stack
        self.folder = folder
        self.current = PLAYBOOK.name
        self.llm_output = ""

    def use(self, variant: Variant) -> None:
        if variant.name == self.current:
            return
        if variant is LLM:
            self.llm_output = self.stack.run_init("demo-init-llm")
        else:
            disabled = [{**doc, "enabled": False} for path in sorted(LLM_DIR.glob("*.yml"))
                        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc["kind"] == "Binding"]
            path = self.folder / "llm-bindings-disabled.yml"
            path.write_text(yaml.safe_dump_all(disabled, allow_unicode=True), encoding="utf-8")
            done = self.stack.cli_here("apply", "-f", str(path))
            assert done.returncode == 0, done.stdout + done.stderr
        self.current = variant.name


class Chat:
    """The chat page's endpoints, as its JavaScript uses them: each user is a browser session
    signed in on the page (tests/harness/chat_webhook.py)."""

    def __init__(self, stack: ComposeStack) -> None:
        self.base = stack.local(8780)
        self.stack = stack
        self.people = PageUsers(self.base)

    def send(self, body: dict[str, Any]) -> dict[str, Any]:
        def accepted() -> dict[str, Any] | None:
            reply = self.people.post(body)
            if reply.status_code == 503:  # the platform has not connected to the app yet
                return None
            assert reply.status_code == 202, reply.text
            found: dict[str, Any] = reply.json()
            return found

        return poll_sync(accepted, timeout=60, what=f"the webhook accepting {body['type']}", interval=0.2)

    def say(self, conversation: str, text: str) -> dict[str, Any]:
        """A user's message in `conversation`, as typed on the page."""
        return self.send({"type": "message.received", "session_id": conversation, "text": text})

    def items(self, conversation: str) -> list[dict[str, Any]]:
        reply = httpx.get(f"{self.base}/conversations/{conversation}", timeout=10)
        assert reply.status_code == 200, reply.text
        found: list[dict[str, Any]] = reply.json()["items"]
        return found

    def replies(self, conversation: str) -> list[dict[str, Any]]:
        return [i for i in self.items(conversation) if i["kind"] == "message" and i["direction"] == "out"]

    def wait(self, conversation: str, wanted: Callable[[list[dict[str, Any]]], Any], what: str,
             timeout: float = 45.0) -> Any:
        last: list[dict[str, Any]] = []

        def probe() -> Any:
            nonlocal last
            last = self.replies(conversation)
            return wanted(last) or None

        try:
            return poll_sync(probe, timeout=timeout, what=what, interval=0.1)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the conversation shows: {json.dumps(last, ensure_ascii=False)[:3000]}"
                                 f"\n{self.stack.cli_here('tasks', 'list').stdout[-3000:]}") from None

    def said(self, conversation: str, needle: str, what: str) -> str:
        """The text of the first reply shown that contains `needle`."""
        found: list[dict[str, Any]] = self.wait(conversation, lambda r: [m for m in r if needle in m["text"]], what)
        return str(found[0]["text"])

    def question(self, conversation: str, about: str = "") -> dict[str, Any]:
        """The first numbered question shown that nobody answered yet (and that names `about`)."""
        def asked(replies: list[dict[str, Any]]) -> dict[str, Any] | None:
            found = [r["question"] for r in replies if r.get("question") and r["question"]["answer"] is None
                     and about in r["question"]["question"]]
            return found[0] if found else None

        found: dict[str, Any] = self.wait(conversation, asked, f"a question in {conversation} about {about!r}")
        return found

    def answer(self, conversation: str, question: dict[str, Any], value: str) -> None:
        self.send({"type": "interaction.submitted", "session_id": conversation,
                   "interaction_id": question["interaction_id"], "value": value})

    def approve(self, conversation: str, tool_name: str, locale: str = "zh-CN") -> None:
        """Answer `allow` to the approval question for `tool_name`, as the user on the page would."""
        words = LANGUAGE[locale]
        question = self.question(conversation, about=f"{words['wants']} {tool_name}")
        assert question["interaction_id"].startswith("apr.")
        assert [o["label"] for o in question["options"]] == words["options"]
        self.answer(conversation, question, "1")

    def approvals_asked(self, conversation: str, tool_name: str) -> list[dict[str, Any]]:
        return [r for r in self.replies(conversation) if r.get("question")
                and r["question"]["interaction_id"].startswith("apr.") and tool_name in r["text"]]

    def speaks(self, stack: ComposeStack, conversation: str, locale: str = "zh-CN") -> list[dict[str, Any]]:
        """Every message sent to the conversation, checked: no JSON, no ids (nor the ids of the
        conversation's tasks), and the platform's own sentences — approval questions, questions'
        hints — in `locale`; in Chinese, every message says something in Chinese."""
        replies = self.replies(conversation)
        listed = json.loads(stack.cli_here("tasks", "list", "--json").stdout)["items"]
        ids = {str(t[k]) for t in listed if t.get("session_id") == conversation for k in ("id", "run_id") if t.get(k)}
        words = LANGUAGE[locale]
        for reply in replies:
            text = reply["text"]
            assert not IDS.search(text), f"JSON or an id in {text!r}"
            assert not [i for i in ids if i in text], f"a task id in {text!r}"
            question = reply.get("question")
            if question is not None:
                assert question["interaction_id"] not in text
                if question["interaction_id"].startswith("apr."):
                    assert words["wants"] in text.splitlines()[0], text
                    assert [o["label"] for o in question["options"]] == words["options"], text
                if question["options"]:
                    assert text.splitlines()[-1] == words["hint"], text
            if locale == "zh-CN":
                assert CJK.search(text), f"no Chinese in {text!r}"
            elif question is not None and question["interaction_id"].startswith("apr."):
                # English: the question's own words; the tool's argument titles are the app's
                assert not CJK.search(text.splitlines()[0] + text.splitlines()[-1]), text
        return replies


def conversation() -> str:
    return f"group_{uuid.uuid4().hex[:8]}"


def tool(stack: ComposeStack, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    done = stack.cli_here("tools", "call", name, "--args", json.dumps(arguments or {}), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def task_in(stack: ComposeStack, conversation: str, agent: str, states: tuple[str, ...]) -> dict[str, Any]:
    """The agent's task for an event of `conversation`, once it is in one of `states` (the newest)."""
    def found() -> dict[str, Any] | None:
        listed = stack.cli_here("tasks", "list", "--agent", agent, "--json")
        assert listed.returncode == 0, listed.stderr
        for item in json.loads(listed.stdout)["items"]:
            if item.get("session_id") == conversation and item["state"] in states:
                shown = stack.cli_here("tasks", "show", item["id"], "--json")
                task: dict[str, Any] = json.loads(shown.stdout)
                return task
        return None

    return poll_sync(found, timeout=45, what=f"{agent}'s task for {conversation} in {states}", interval=0.2)


def tool_steps(task: dict[str, Any]) -> list[str]:
    """The task's tool calls made, in order (the delivery is a step of its own kind)."""
    return [s["name"] for s in task["steps"] if s["kind"] == "tool" and s["status"] != "skipped"]


def rules(stack: ComposeStack, key: str) -> list[dict[str, Any]]:
    """P-101's rules saved under `key`, as the industrial system lists them."""
    listed = tool(stack, "demo.industrial.list_rules", {"device_id": "P-101"})["structured"]["items"]
    return [r for r in listed if r["idempotency_key"] == key]
