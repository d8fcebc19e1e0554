"""The README's "with a real model" path, with a real model: `aurora dev` with AURORA_MODEL_BASE_URL
and AURORA_MODEL set, against SmolLM2-135M-Instruct on llama-cpp-python's server, and one demo
event of each kind sent through the chat page as a person on the page sends it, one at a time
(the server answers one request at a time; a conversation's next turn then reuses the prompt it
has just read instead of reading ~2k tokens again).

Whatever a 135M model plans, the platform's promises hold:
- `aurora dev` applies deploy/demo/llm/, and the llm agents take the demo's events;
- every task ends in a terminal state within a bound, none left with a step half done, and a
  failed one says why — nothing hangs;
- the real server accepts every request the runner sends, later turns of a conversation too
  (but one grown past its context window, whose run then fails);
- a tool call the platform refused (arguments that are not JSON, an unknown tool) or that failed
  is told to the model: the next request the runner sent carries that error in the call's tool
  message (read at a relay in front of the model);
- every write waits for its approval: no write reached its system without a granted approval
  for that task and tool, decided before the call (the gateway's audit against the approvals);
  a write the person denied never ran, and its task ended cancelled saying so.
The answers' wording is the model's: nothing here judges it. The relay's log of every exchange
(model-exchanges.jsonl in the test's folder) shows what it did and how long each turn took.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from aurora_cli.localnats import free_port
from shared.contracts.task import TERMINAL_STATES
from tests.harness.chat_webhook import PageUsers
from tests.harness.cli import Cli
from tests.harness.dev_stack import DevProcess
from tests.harness.processes import REPO
from tests.harness.real_model import Exchange, RealModel, RecordingProxy
from tests.harness.waiting import poll_sync

pytestmark = [pytest.mark.model, pytest.mark.timeout(2400)]

LLM_DIR = REPO / "deploy" / "demo" / "llm"
LLM_AGENTS = ("relay-llm", "rule-llm", "greeter-llm", "friend-llm")
# Seconds for a scenario's task to end. A task takes up to nine turns (eight tool rounds and the
# answer); its first reads a ~2k-token prompt (~10 s on two idle cores), the next ones reuse it and
# take a second or a few; the demo systems' string arguments have a length, so a call's arguments
# end (see CONTEXT_TOKENS in tests/harness/real_model.py for what else bounds a turn), and the
# runner gives up on a turn at its timeout (240 s). A scenario took 15-80 s on a lightly loaded
# machine, up to 6.5 minutes on one loaded four times over.
SETTLE_WITHIN = 480.0
WRITES = ("write", "dangerous")
# The writes an agent makes without an approval, by design: a reply in the conversation its event
# came from and a reaction to that message (the runner delivers the answer with event_reply).
IN_THE_EVENTS_OWN_CONVERSATION = ("event_reply", "event_react")


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealModel]:
    with RealModel.start(tmp_path_factory.mktemp("model")) as running:
        yield running


@pytest.fixture
def relay(model: RealModel, tmp_path: Path) -> Iterator[RecordingProxy]:
    proxy = RecordingProxy(model.base_url, log=tmp_path / "model-exchanges.jsonl").start()
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
    model's timeout is raised: a turn of a long prompt on two loaded cores can pass a minute; an
    answer is kept short, as the docs advise for a small local model)."""
    env = {"AURORA_MODEL_BASE_URL": relay.base_url, "AURORA_MODEL": model.name,
           "AURORA_MODEL_TIMEOUT_SECONDS": "240", "AURORA_MODEL_MAX_TOKENS": "256", "CHAT_WEB_PORT": str(chat_port)}
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


@pytest.fixture
def page(chat_port: int) -> Iterator[Page]:
    opened = Page(f"http://127.0.0.1:{chat_port}")
    try:
        yield opened
    finally:
        opened.people.close()  # each user's browser session (left open, its socket warns at collection)


def _json(cli: Cli, *args: str) -> Any:
    done = cli(*args, "--json")
    assert done.returncode == 0, f"aurora {' '.join(args)}: {done.stdout}{done.stderr}"
    return json.loads(done.stdout)


@dataclass(frozen=True)
class Scenario:
    """One demo event the page sends, the llm agent its binding gives it to, and what the person
    does with the approvals its task asks for, in turn, the last one for every later approval
    (the model's own questions in the chat get the first option)."""

    name: str
    agent: str
    event: dict[str, Any]
    decisions: tuple[str, ...] = ("grant",)  # "grant" | "deny"


SCENARIOS = (
    # A read across two systems; P-101 has several assets, so a question to the user may come.
    Scenario("read", "relay-llm", {"type": "message.received", "session_id": "group_model_relay",
                                   "text": "设备 P-101 最近的告警和资产档案"}),
    # Writes (save, enable) that wait for their approval: the first granted, any later one denied
    # (the task then ends cancelled, that call never made).
    Scenario("write", "rule-llm", {"type": "message.received", "session_id": "group_model_rule",
                                   "text": "给设备 P-101 添加规则 温度超过 93 告警"}, decisions=("grant", "deny")),
    # Not a message: the model is given the event as data and answers (two tool rounds at most).
    Scenario("welcome", "greeter-llm", {"type": "group.member_joined", "session_id": "group_model_welcome",
                                        "user_id": "u42"}),
    # A write the person refuses: its task ends cancelled, and the call never ran.
    Scenario("friend", "friend-llm", {"type": "friend.request_received", "user_id": "u43", "note": "设备组的小王",
                                      "shown_in": "group_model_friend"}, decisions=("deny",)),
)
SESSIONS = {str(s.event.get("session_id") or s.event.get("shown_in")) for s in SCENARIOS}


@dataclass
class Decisions:
    """The approvals the person decided, each as it was while its task waited for it."""

    granted: dict[str, dict[str, Any]] = field(default_factory=dict)
    denied: dict[str, dict[str, Any]] = field(default_factory=dict)


def test_aurora_dev_with_a_real_small_model_ends_every_task_honestly(
        dev: DevProcess, relay: RecordingProxy, page: Page) -> None:
    began = time.monotonic()
    dev.wait_until_up(timeout=180)
    output = dev.output()
    cli = dev.cli_here()
    agents = {a["id"] for a in _json(cli, "get", "agents")["items"]}
    assert set(LLM_AGENTS) <= agents, f"deploy/demo/llm/ was not applied: {sorted(agents)}\n{output}"

    decisions = Decisions()
    timings = [f"aurora dev up in {time.monotonic() - began:.0f}s"]
    tasks: list[dict[str, Any]] = []
    ended: dict[str, dict[str, Any]] = {}
    # One scenario at a time: the server answers one request at a time anyway, and a conversation's
    # next turn then reuses the prompt it has just read (seconds) instead of reading ~2k tokens again.
    for scenario in SCENARIOS:
        began, turns = time.monotonic(), len(relay.recorded())
        page.send(scenario.event)
        tasks = _settle(cli, page, scenario, decisions, ended)
        asked = relay.recorded()[turns:]
        timings.append(f"{scenario.name}: {time.monotonic() - began:.0f}s, {len(asked)} model turns "
                       f"(longest {max((e.seconds for e in asked), default=0):.0f}s)")
    print("\n".join(timings))  # what a run costs, in the test's output

    summary = "\n".join(f"{t['agent']} {t['state']} ({t['transitions'][-1].get('reason')}) "
                        f"{[(s['id'], s['name'], s.get('classification')) for s in t['steps']]}" for t in tasks)
    print(f"the model's tasks:\n{summary}")  # what the 135M model did, in the test's output
    assert {s.agent for s in SCENARIOS} <= {t["agent"] for t in tasks}, summary

    for task in tasks:
        assert task["state"] in TERMINAL_STATES, summary
        half_done = [s["id"] for s in task["steps"] if s["status"] == "started"]
        assert not half_done, f"task {task['id']} ended {task['state']} with steps still started: {half_done}"
        if task["state"] == "failed":
            reason = task["transitions"][-1].get("reason") or (task.get("error") or {}).get("message")
            assert reason, f"task {task['id']} failed without saying why: {task['transitions'][-1]}"

    _every_refused_or_failed_call_was_told_to_the_model(tasks, relay)
    _every_write_waited_for_its_approval(cli, tasks, decisions)
    assert relay.recorded(), "the runners never asked the model"
    # The runner speaks the real server's protocol: no turn of a conversation is refused (the
    # assistant's tool-call turn sent back with `content: null`, or none, was: every run failed at m2)
    # but for a conversation grown past the server's context window (the model's own runaway
    # arguments), which is OpenAI's 400 `context_length_exceeded`. Its run ends failed, saying so
    # (or that the model did not answer in time, when the runner gave up waiting first): a 400 is
    # not asked again, so there are at least as many failed tasks.
    refused = [(e.status, str(e.response)[:300]) for e in relay.recorded() if e.status != 200 and not _too_long(e)]
    assert not refused, refused
    too_long = [e for e in relay.recorded() if _too_long(e)]
    assert len(too_long) <= sum(t["state"] == "failed" for t in tasks), \
        f"{len(too_long)} requests over the context window, yet fewer tasks failed:\n{summary}"


def _too_long(exchange: Exchange) -> bool:
    return exchange.status == 400 and (exchange.response.get("error") or {}).get("code") == "context_length_exceeded"


def _settle(cli: Cli, page: Page, scenario: Scenario, decisions: Decisions,
            ended: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Play the person until the scenario's task, and every other of the demo's, has ended:
    decide each approval as it waits (granting or denying as the scenario says, noting it was
    pending with its task waiting), answer the model's questions with the first option. Returns
    every task of the demo's events so far (`ended` keeps each as it ended: an ended task does
    not change); fails if they do not end within SETTLE_WITHIN. Every two seconds, and a task is
    read whole only once it ended: on two cores this loop competes with the model for them."""
    deadline = time.monotonic() + SETTLE_WITHIN
    room = str(scenario.event.get("session_id") or scenario.event.get("shown_in"))
    listed: list[dict[str, Any]] = []
    by_agent = {s.agent: s for s in SCENARIOS}
    while time.monotonic() < deadline:
        for approval in _json(cli, "approvals", "list", "--state", "pending"):
            task = _json(cli, "tasks", "show", approval["task_id"]) if approval.get("task_id") else None
            if task is None or task["state"] != "awaiting_approval":
                continue  # its task is not parked yet: the next round sees it waiting
            mine = by_agent.get(task["agent"], scenario).decisions
            decided_before = sum(a.get("task_id") == task["id"] for a in (*decisions.granted.values(),
                                                                          *decisions.denied.values()))
            deny = mine[min(decided_before, len(mine) - 1)] == "deny"
            (decisions.denied if deny else decisions.granted)[approval["id"]] = approval
            done = cli("approvals", "deny" if deny else "grant", approval["id"])
            assert done.returncode == 0, done.stdout + done.stderr
        for question in page.open_questions(room):  # the earlier scenarios' tasks have all ended
            page.send({"type": "interaction.submitted", "session_id": room,
                       "interaction_id": question["interaction_id"], "value": "1"})
        listed = [t for t in _json(cli, "tasks", "list", "--limit", "200")["items"]
                  if t.get("agent") in LLM_AGENTS or t.get("session_id") in SESSIONS]
        for task in listed:
            if task["state"] in TERMINAL_STATES and task["id"] not in ended:
                ended[task["id"]] = _json(cli, "tasks", "show", task["id"])
        if scenario.agent in {t["agent"] for t in listed} and all(t["id"] in ended for t in listed):
            return [ended[t["id"]] for t in listed]
        time.sleep(2.0)
    stuck = [(t["id"], t["agent"], t["state"], t["steps"]) for t in listed if t["id"] not in ended]
    raise AssertionError(f"{scenario.name}: tasks still not ended after {SETTLE_WITHIN:g}s (id, agent, state, "
                         f"steps): {stuck}")


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


def _every_write_waited_for_its_approval(cli: Cli, tasks: list[dict[str, Any]], decisions: Decisions) -> None:
    granted = decisions.granted
    approvals = {a["id"]: a for a in _json(cli, "approvals", "list")}
    done = cli("audit", "tail", "--from-start", "--json", "--timeout", "3")
    records = [json.loads(line) for line in done.stdout.splitlines() if line.strip().startswith("{")]
    assert records, f"no audit records: {done.stdout[-2000:]}{done.stderr}"
    ran_writes = [r for r in records if r.get("executed") and r.get("side_effect") in WRITES
                  and str(r.get("caller", "")).startswith("agent:") and r["tool"] not in IN_THE_EVENTS_OWN_CONVERSATION]
    for record in ran_writes:
        approval = approvals.get(record.get("approval_id") or "")
        assert approval is not None, f"{record['tool']} ran for {record['caller']} with no approval: {record}"
        assert approval["id"] in granted, f"{record['tool']} ran on an approval nobody granted here: {approval}"
        assert approval["tool"] == record["tool"] and approval["task_id"] == record["task_id"], (approval, record)
        assert approval["decided_at"] and approval["decided_at"] <= record["at"], (approval, record)
    for task in tasks:
        for step in task["steps"]:
            if step["kind"] == "tool" and step.get("side_effect") in WRITES and step.get("classification") not in (
                    None, "needs_approval", "denied") and step["name"] not in IN_THE_EVENTS_OWN_CONVERSATION:
                assert step.get("approval_id") in granted, f"{task['agent']}'s write {step['id']} ({step['name']}) " \
                                                           f"ended {step['classification']} without a granted approval"
    # A refused write never ran, and its task ended cancelled saying who refused it.
    tasks_by_id = {t["id"]: t for t in tasks}
    for approval_id, approval in decisions.denied.items():
        ran = [r for r in records if r.get("approval_id") == approval_id and r.get("executed")]
        assert not ran, f"{approval['tool']} ran on an approval denied here: {ran}"
        task = tasks_by_id[approval["task_id"]]
        ended = task["transitions"][-1]
        assert task["state"] == "cancelled" and approval_id in (ended.get("reason") or ""), \
            f"{task['agent']}'s task whose write {approval['tool']} was denied ended {task['state']}: {ended}"
    print(f"writes: {len(ran_writes)} ran, each after its approval; approvals granted: {len(granted)}, "
          f"denied: {len(decisions.denied)}")
