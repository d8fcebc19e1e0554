"""The README's "with a real model" path, with a real model: `aurora dev` with AURORA_MODEL_BASE_URL
and AURORA_MODEL set, against SmolLM2-135M-Instruct on llama-cpp-python's server, and the demo's
messages sent through the chat page's webhook as a person on the page sends them.

Whatever a 135M model plans, the platform's promises hold:
- `aurora dev` applies deploy/demo/llm/, and the llm agents take the demo's events;
- every task ends in a terminal state within a bound, none left with a step half done, and a
  failed one says why — nothing hangs;
- the real server accepts every request the runner sends, later turns of a conversation too;
- a tool call the platform refused or that failed is told to the model: the next request the
  runner sent carries that error in the call's tool message (read at a relay in front of the model);
- every write waits for its approval: no write reached its system without a granted approval
  for that task and tool, decided before the call (the gateway's audit against the approvals).
The answers' wording is the model's: nothing here judges it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from aurora_cli.localnats import free_port
from shared.contracts.task import TERMINAL_STATES
from tests.harness.chat_webhook import PageUsers
from tests.harness.dev_stack import DevProcess
from tests.harness.processes import REPO
from tests.harness.real_model import RealModel, RecordingProxy
from tests.harness.waiting import poll_sync
from tests.integration.cli.conftest import Cli

pytestmark = [pytest.mark.model, pytest.mark.timeout(1800)]

LLM_DIR = REPO / "deploy" / "demo" / "llm"
LLM_AGENTS = ("relay-llm", "rule-llm", "greeter-llm", "friend-llm")
# Seconds for every task of the demo's messages to end: the server answers one request at a time,
# a turn's prompt (the tools' schemas, the results so far) is ~3k tokens, ~20 s on two cores, and
# five tasks may take up to nine turns each.
SETTLE_WITHIN = 1500.0
WRITES = ("write", "dangerous")


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealModel]:
    with RealModel.start(tmp_path_factory.mktemp("model")) as running:
        yield running


@pytest.fixture
def relay(model: RealModel) -> Iterator[RecordingProxy]:
    proxy = RecordingProxy(model.base_url).start()
    try:
        yield proxy
    finally:
        proxy.stop()


@pytest.fixture
def chat_port() -> int:
    return free_port()


@pytest.fixture
def dev(tmp_path: Path, model: RealModel, relay: RecordingProxy, chat_port: int) -> Iterator[DevProcess]:
    """`aurora dev` as the README says: the model's settings in the environment, nothing else (the
    model's timeout is raised: a turn of a long prompt on two loaded cores can pass a minute)."""
    env = {"AURORA_MODEL_BASE_URL": relay.base_url, "AURORA_MODEL": model.name,
           "AURORA_MODEL_TIMEOUT_SECONDS": "240", "CHAT_WEB_PORT": str(chat_port)}
    stack = DevProcess(tmp_path / "dev", free_port(), tmp_path / "aurora-dev.out", env=env)
    try:
        yield stack
    finally:
        stack.kill()


class Page:
    """The chat page's webhook and conversation view, as its JavaScript uses them."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.people = PageUsers(base)  # each user signed in to the page, as a browser is

    def send(self, body: dict[str, Any]) -> dict[str, Any]:
        def accepted() -> dict[str, Any] | None:
            try:
                reply = self.people.post(body)
            except httpx.TransportError:
                return None  # the page is not serving yet
            if reply.status_code == 503:  # the platform has not connected to the app yet (or not signed in)
                return None
            assert reply.status_code == 202, reply.text
            found: dict[str, Any] = reply.json()
            return found

        return poll_sync(accepted, timeout=60, what=f"the webhook accepting {body['type']}", interval=0.2)

    def items(self, conversation: str) -> list[dict[str, Any]]:
        reply = httpx.get(f"{self.base}/conversations/{conversation}", timeout=10)
        assert reply.status_code == 200, reply.text
        found: list[dict[str, Any]] = reply.json()["items"]
        return found

    def open_questions(self, conversation: str) -> list[dict[str, Any]]:
        """The model's own questions (request_action) nobody answered yet; approvals are granted
        where the README says, `aurora approvals grant`."""
        return [i["question"] for i in self.items(conversation) if i.get("question")
                and i["question"]["answer"] is None and not i["question"]["interaction_id"].startswith("apr.")]


def _json(cli: Cli, *args: str) -> Any:
    done = cli(*args, "--json")
    assert done.returncode == 0, f"aurora {' '.join(args)}: {done.stdout}{done.stderr}"
    return json.loads(done.stdout)


def test_aurora_dev_with_a_real_small_model_ends_every_task_honestly(
        dev: DevProcess, relay: RecordingProxy, chat_port: int, tmp_path: Path) -> None:
    dev.wait_until_up(timeout=180)
    output = dev.output()
    cli = dev.cli_here()
    agents = {a["id"] for a in _json(cli, "get", "agents")["items"]}
    assert set(LLM_AGENTS) <= agents, f"deploy/demo/llm/ was not applied: {sorted(agents)}\n{output}"

    page = Page(f"http://127.0.0.1:{chat_port}")
    rooms = {"relay": "group_model_relay", "choice": "group_model_choice", "rule": "group_model_rule",
             "welcome": "group_model_welcome", "friend": "group_model_friend"}
    for room, text in (("relay", "设备 C-3 最近的告警和资产档案"), ("choice", "设备 P-101 最近的告警和资产档案"),
                       ("rule", "给设备 P-101 添加规则 温度超过 93 告警")):
        page.send({"type": "message.received", "session_id": rooms[room], "text": text})
    page.send({"type": "group.member_joined", "session_id": rooms["welcome"], "user_id": "u42"})
    page.send({"type": "friend.request_received", "user_id": "u43", "note": "设备组的小王",
               "shown_in": rooms["friend"]})

    granted: dict[str, dict[str, Any]] = {}  # approval id → the approval as it was while it waited
    tasks = _settle(cli, page, rooms, granted)

    summary = "\n".join(f"{t['agent']} {t['state']} ({t['transitions'][-1].get('reason')}) "
                        f"{[(s['id'], s['name'], s.get('classification')) for s in t['steps']]}" for t in tasks)
    print(f"the model's tasks:\n{summary}")  # what the 135M model did, in the test's output
    by_agent = {t["agent"] for t in tasks}
    assert {"relay-llm", "rule-llm", "greeter-llm", "friend-llm"} <= by_agent, summary

    for task in tasks:
        assert task["state"] in TERMINAL_STATES, summary
        half_done = [s["id"] for s in task["steps"] if s["status"] == "started"]
        assert not half_done, f"task {task['id']} ended {task['state']} with steps still started: {half_done}"
        if task["state"] == "failed":
            reason = task["transitions"][-1].get("reason") or (task.get("error") or {}).get("message")
            assert reason, f"task {task['id']} failed without saying why: {task['transitions'][-1]}"

    _every_refused_or_failed_call_was_told_to_the_model(tasks, relay)
    _every_write_waited_for_its_approval(cli, tasks, granted)
    assert relay.recorded(), "the runners never asked the model"
    # The runner speaks the real server's protocol: no turn of a conversation is refused (the
    # assistant's tool-call turn sent back with `content: null`, or none, was: every run failed at m2).
    refused = [(e.status, str(e.response)[:300]) for e in relay.recorded() if e.status != 200]
    assert not refused, refused


def _settle(cli: Cli, page: Page, rooms: dict[str, str], granted: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Play the person until every task of the demo's events has ended: grant each approval as
    it waits (noting it was pending with its task waiting), answer the model's questions with the
    first option. Fails if the tasks do not all end within SETTLE_WITHIN."""
    sessions = set(rooms.values())
    deadline = time.monotonic() + SETTLE_WITHIN
    last: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        for approval in _json(cli, "approvals", "list", "--state", "pending"):
            task = _json(cli, "tasks", "show", approval["task_id"]) if approval.get("task_id") else None
            if task is None or task["state"] != "awaiting_approval":
                continue  # its task is not parked yet: the next round sees it waiting
            granted[approval["id"]] = approval
            done = cli("approvals", "grant", approval["id"])
            assert done.returncode == 0, done.stdout + done.stderr
        for room in sessions:
            for question in page.open_questions(room):
                page.send({"type": "interaction.submitted", "session_id": room,
                           "interaction_id": question["interaction_id"], "value": "1"})
        listed = _json(cli, "tasks", "list", "--limit", "200")["items"]
        ours = [t for t in listed if t.get("agent") in LLM_AGENTS or t.get("session_id") in sessions]
        last = [_json(cli, "tasks", "show", t["id"]) for t in ours]
        agents = {t["agent"] for t in last}
        if {"relay-llm", "rule-llm", "greeter-llm", "friend-llm"} <= agents and \
                all(t["state"] in TERMINAL_STATES for t in last):
            return last
        time.sleep(1.0)
    stuck = [(t["id"], t["agent"], t["state"], [s["id"] for s in t["steps"]][-3:]) for t in last]
    raise AssertionError(f"tasks still not ended after {SETTLE_WITHIN:g}s: {stuck}")


def _every_refused_or_failed_call_was_told_to_the_model(tasks: list[dict[str, Any]], relay: RecordingProxy) -> None:
    told = [json.loads(m["content"]) for exchange in relay.recorded() for m in exchange.request.get("messages", [])
            if m.get("role") == "tool" and str(m.get("content", "")).startswith("{")]
    told_errors = {(t.get("error") or {}).get("code"): t for t in told if t.get("error")}
    for task in tasks:
        steps = task["steps"]
        for index, step in enumerate(steps):
            if step["kind"] != "tool" or not step.get("error") or step.get("classification") in (
                    "needs_approval", "unavailable", "outcome_unknown"):
                continue  # those stop the run (wait, retry, unverified) rather than go back to the model
            asked_again = any(s["kind"] == "model" for s in steps[index + 1:])
            if not asked_again:
                continue  # the run ended on it (its task says so)
            error = step["error"]
            assert any(t["error"].get("code") == error["code"] and t["error"].get("message") == error["message"]
                       for t in told if t.get("error")), \
                f"{task['agent']}'s {step['id']} ({step['name']}) failed with {error} but no later request told " \
                f"the model; errors told: {list(told_errors)}"


def _every_write_waited_for_its_approval(cli: Cli, tasks: list[dict[str, Any]],
                                         granted: dict[str, dict[str, Any]]) -> None:
    approvals = {a["id"]: a for a in _json(cli, "approvals", "list")}
    done = cli("audit", "tail", "--from-start", "--json", "--timeout", "3")
    records = [json.loads(line) for line in done.stdout.splitlines() if line.strip().startswith("{")]
    assert records, f"no audit records: {done.stdout[-2000:]}{done.stderr}"
    ran_writes = [r for r in records if r.get("executed") and r.get("side_effect") in WRITES
                  and str(r.get("caller", "")).startswith("agent:")]
    for record in ran_writes:
        approval = approvals.get(record.get("approval_id") or "")
        assert approval is not None, f"{record['tool']} ran for {record['caller']} with no approval: {record}"
        assert approval["id"] in granted, f"{record['tool']} ran on an approval nobody granted here: {approval}"
        assert approval["tool"] == record["tool"] and approval["task_id"] == record["task_id"], (approval, record)
        assert approval["decided_at"] and approval["decided_at"] <= record["at"], (approval, record)
    for task in tasks:
        for step in task["steps"]:
            if step["kind"] == "tool" and step.get("side_effect") in WRITES and step.get("classification") not in (
                    None, "needs_approval", "denied"):
                assert step.get("approval_id") in granted, f"{task['agent']}'s write {step['id']} ({step['name']}) " \
                                                           f"ended {step['classification']} without a granted approval"
    print(f"writes: {len(ran_writes)} ran, each after its approval; approvals granted: {len(granted)}")
