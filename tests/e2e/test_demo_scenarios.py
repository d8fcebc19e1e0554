"""The seeds' three scenarios on the stack `docker compose up` runs (compose.yaml's commands as
local processes, see `compose_stack`), driven the way a person on the chat page drives them —
through the chat app's webhook (`POST /events`) — and checked on what the page shows
(`GET /conversations/<id>`), plus the task records the CLI shows.

1. cross-system read relay: alarms → asset search → profile, both sources named; two matching
   assets → a numbered question, answered, the task resumes; no asset → the alarm data stays.
2. reliable write loop: draft → approval in the chat → save (idempotency key) → read back →
   enable (approval); a failed enable is `partial`; a lost save response is `unverified`, and
   asking again finds the rule by its key (one rule, never two).
3. non-message events: a welcome in the group; a friend request answered only after an approval;
   `message.deleted` routed as itself, with nothing sent.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.e2e.compose_stack import SERVICES, ComposeStack, interpolate
from tests.fakes.openai_server import Conversation, FakeOpenAI, Turn
from tests.harness.waiting import poll_sync

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAI]:
    """The `llm` profile's model server, faked (the only fake: a model is a paid API): compose's
    runners point at `ollama:11434`, which the stack rewrites to this server's port."""
    fake = FakeOpenAI().start()
    fake.script(interpolate(SERVICES["runner"]["environment"]["AURORA_MODEL"]), relay_script)
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, model: FakeOpenAI) -> Iterator[ComposeStack]:
    running = ComposeStack(tmp_path_factory.mktemp("compose"))
    running.ports[11434] = int(model.base_url.rsplit(":", 1)[1].split("/")[0])
    try:
        running.start()
        yield running
    finally:
        running.stop()


def relay_script(chat: Conversation) -> Turn:
    """What a model plans for scenario 1: device → alarms → assets by the alarm's device name →
    profile when exactly one matches → an answer naming both sources."""
    results = [r.get("result") for r in chat.tool_results()]
    if chat.turn == 1:
        return chat.call("find_device", text=chat.event["data"]["text"])
    if chat.turn == 2:
        return chat.call("list_alarms", device_id=results[0]["device_id"])
    alarm = results[1]["latest"]
    if chat.turn == 3:
        return chat.call("search_assets", deviceName=alarm["device_name"])
    found = results[2]
    if chat.turn == 4 and found["count"] == 1:
        return chat.call("get_asset_profile", assetCode=found["items"][0]["assetCode"])
    asset = f"{results[3]['assetCode']} {results[3]['name']}" if found["count"] == 1 else "资产记录缺失"
    return chat.answer(f"{alarm['alarm_id']} {alarm['message']}【来源：工业系统】；{asset}【来源：资产系统】")


class Chat:
    """The chat page's two endpoints, as its JavaScript uses them."""

    def __init__(self, stack: ComposeStack) -> None:
        self.base = stack.local(8780)
        self.stack = stack

    def send(self, body: dict[str, Any]) -> dict[str, Any]:
        def accepted() -> dict[str, Any] | None:
            reply = httpx.post(f"{self.base}/events", json=body, timeout=10)
            if reply.status_code == 503:  # the platform has not connected to the app yet
                return None
            assert reply.status_code == 202, reply.text
            found: dict[str, Any] = reply.json()
            return found

        return poll_sync(accepted, timeout=60, what=f"the webhook accepting {body['type']}", interval=0.5)

    def items(self, conversation: str) -> list[dict[str, Any]]:
        reply = httpx.get(f"{self.base}/conversations/{conversation}", timeout=10)
        assert reply.status_code == 200, reply.text
        found: list[dict[str, Any]] = reply.json()["items"]
        return found

    def replies(self, conversation: str) -> list[dict[str, Any]]:
        return [i for i in self.items(conversation) if i["kind"] == "message" and i["direction"] == "out"]

    def wait(self, conversation: str, wanted: Callable[[list[dict[str, Any]]], Any], what: str,
             timeout: float = 30.0) -> Any:
        last: list[dict[str, Any]] = []

        def probe() -> Any:
            nonlocal last
            last = self.replies(conversation)
            return wanted(last) or None

        try:
            return poll_sync(probe, timeout=timeout, what=what, interval=0.2)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the conversation shows: {json.dumps(last, ensure_ascii=False)[:3000]}"
                                 f"\n{self.stack.cli('tasks', 'list').stdout[-3000:]}") from None

    def question(self, conversation: str, about: str = "") -> dict[str, Any]:
        """The first numbered question shown that nobody answered yet (and that names `about`)."""
        def asked(replies: list[dict[str, Any]]) -> dict[str, Any] | None:
            found = [r["question"] for r in replies if r.get("question") and r["question"]["answer"] is None
                     and about in r["question"]["question"]]
            return found[0] if found else None

        found: dict[str, Any] = self.wait(conversation, asked, f"a question in {conversation}")
        return found

    def answer(self, conversation: str, question: dict[str, Any], value: str) -> None:
        self.send({"type": "interaction.submitted", "session_id": conversation,
                   "interaction_id": question["interaction_id"], "value": value})


@pytest.fixture
def chat(stack: ComposeStack) -> Chat:
    return Chat(stack)


def conversation() -> str:
    return f"group_{uuid.uuid4().hex[:8]}"


def tool(stack: ComposeStack, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    done = stack.cli("tools", "call", name, "--args", json.dumps(arguments or {}), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def tasks(stack: ComposeStack) -> list[dict[str, Any]]:
    done = stack.cli("tasks", "list", "--json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    items: list[dict[str, Any]] = found["items"] if isinstance(found, dict) else found
    return items


def task_in(stack: ComposeStack, conversation: str, agent: str, states: tuple[str, ...]) -> dict[str, Any]:
    """The agent's task for an event of `conversation`, once it is in one of `states`."""
    def found() -> dict[str, Any] | None:
        for item in tasks(stack):
            if item.get("target", {}).get("id") == agent and item["state"] in states:
                shown = stack.cli("tasks", "show", item["id"], "--json")
                task: dict[str, Any] = json.loads(shown.stdout)
                if task.get("delivery", {}).get("reply_target", {}).get("session_id") == conversation:
                    return task
        return None

    return poll_sync(found, timeout=30, what=f"{agent}'s task for {conversation} in {states}", interval=0.5)


def test_demo_init_applied_the_scenarios_and_published_the_asset_register_from_its_openapi(
        stack: ComposeStack) -> None:
    assert "openapiimport/assets" in stack.demo_init_output
    for name in ("relay-desk", "rule-desk", "friend-desk", "greeter", "deletion-log"):
        assert f"agent/{name}" in stack.demo_init_output
    shown = json.loads(stack.cli("tools", "show", "demo.assets.search_assets", "--json").stdout)
    assert shown["state"] == "PUBLISHED" and shown["source"] == "openapi" and shown["system"] == "assets"
    again = stack.cli("apply", "-f", "deploy/demo/", env=stack.demo_init_env())
    assert again.returncode == 0 and "created" not in again.stdout and "updated" not in again.stdout, again.stdout


# ---------------------------------------------------------------- scenario 1: the read relay


def test_relay_names_the_alarm_and_the_asset_with_their_sources(stack: ComposeStack, chat: Chat) -> None:
    room = conversation()
    chat.send({"type": "message.received", "session_id": room, "text": "设备 C-3 最近的告警和资产档案"})
    replies = chat.wait(room, lambda r: r, "the relay's answer")
    text = replies[0]["text"]
    assert "ALM-1003" in text and "discharge pressure 7.9 bar" in text and "【来源：工业系统】" in text
    assert "AS-0003 Screw compressor C-3" in text and "【来源：资产系统】" in text
    task = task_in(stack, room, "relay-desk", ("succeeded",))
    search = next(s for s in task["steps"] if s["id"] == "search")
    assert search["arguments"] == {"deviceName": "Compressor C-3"}  # the alarm's device name, relayed


def test_two_matching_assets_ask_which_and_the_answer_resumes_the_task(stack: ComposeStack, chat: Chat) -> None:
    room = conversation()
    chat.send({"type": "message.received", "session_id": room, "text": "设备 P-101 最近的告警和资产档案"})
    question = chat.question(room)
    assert [o["label"] for o in question["options"]] == ["Circulation pump P-101 (pump body)",
                                                        "Drive motor of pump P-101"]
    assert task_in(stack, room, "relay-desk", ("awaiting_approval",))["interaction_id"] == \
        question["interaction_id"]
    chat.answer(room, question, "2")
    replies = chat.wait(room, lambda r: r if len(r) >= 2 else None, "the answer after the choice")
    assert "AS-0002 Drive motor of pump P-101" in replies[1]["text"] and "ALM-1001" in replies[1]["text"]
    assert "AS-0001" not in replies[1]["text"]
    assert chat.replies(room)[0]["question"]["answer"]["value"] == "2"  # the page shows the answer given
    task_in(stack, room, "relay-desk", ("succeeded",))


def test_no_asset_keeps_the_alarm_and_says_the_record_is_missing(stack: ComposeStack, chat: Chat) -> None:
    room = conversation()
    chat.send({"type": "message.received", "session_id": room, "text": "设备 F-9 最近的告警和资产档案"})
    text = chat.wait(room, lambda r: r, "the relay's answer")[0]["text"]
    assert "ALM-1002" in text and "vibration 7.1 mm/s" in text
    assert "资产系统中没有与「Fan F-9」关联的资产记录（未作关联）" in text and "AS-" not in text
    task = task_in(stack, room, "relay-desk", ("succeeded",))
    assert next(s for s in task["steps"] if s["id"] == "profile")["status"] == "skipped"


# ---------------------------------------------------------------- scenario 2: the write loop


def _approve_in_chat(chat: Chat, room: str, tool_name: str) -> None:
    """Answer `allow` to the approval question for `tool_name`, as the user on the page would."""
    question = chat.question(room, about=f"wants to call {tool_name}")
    assert question["interaction_id"].startswith("apr.")
    assert [o["label"] for o in question["options"]] == ["allow", "refuse"]
    chat.answer(room, question, "1")


def _rules(stack: ComposeStack, key: str) -> list[dict[str, Any]]:
    listed = tool(stack, "demo.industrial.list_rules", {"device_id": "P-101"})["structured"]["items"]
    return [r for r in listed if r["idempotency_key"] == key]


def test_a_rule_is_drafted_approved_saved_read_back_and_enabled(stack: ComposeStack, chat: Chat) -> None:
    room = conversation()
    chat.send({"type": "message.received", "session_id": room, "text": "给设备 P-101 添加规则 温度超过 91 告警"})
    _approve_in_chat(chat, room, "demo.industrial.save_rule")
    _approve_in_chat(chat, room, "demo.industrial.enable_rule")
    text = chat.wait(room, lambda r: [m for m in r if "已保存并启用" in m["text"]], "the rule desk's answer")[0]["text"]
    assert "P-101 bearing temperature > 91 °C" in text and "单位 °C" in text and "回读与草稿一致" in text
    task = task_in(stack, room, "rule-desk", ("succeeded",))
    assert [s["id"] for s in task["steps"] if s["kind"] in ("tool", "verify")] == \
        ["device", "points", "draft", "existing", "save", "readback", "compare", "enable"]
    [rule] = _rules(stack, "rule:P-101:TT-204:>:91")
    assert rule["enabled"] is True and rule["threshold"] == 91.0


def test_a_failed_enable_ends_partial_saying_what_is_saved_and_what_not(stack: ComposeStack, chat: Chat) -> None:
    room = conversation()
    tool(stack, "demo.industrial.fail_next_enable")
    chat.send({"type": "message.received", "session_id": room, "text": "给设备 P-101 添加规则 温度超过 92 告警"})
    _approve_in_chat(chat, room, "demo.industrial.save_rule")
    _approve_in_chat(chat, room, "demo.industrial.enable_rule")
    text = chat.wait(room, lambda r: [m for m in r if "没有启用" in m["text"]], "the partial answer")[0]["text"]
    assert "已完成：保存规则；未完成：启用规则" in text and "rule engine busy" in text
    task = task_in(stack, room, "rule-desk", ("partial",))
    assert "enable" in (task["transitions"][-1]["reason"] or "")
    [rule] = _rules(stack, "rule:P-101:TT-204:>:92")
    assert rule["enabled"] is False


def test_a_lost_save_response_is_unverified_and_asking_again_finds_the_rule_by_its_key(
        stack: ComposeStack, chat: Chat) -> None:
    room = conversation()
    key = "rule:P-101:PT-110:>:8.5"
    tool(stack, "demo.industrial.drop_next_save_response")
    chat.send({"type": "message.received", "session_id": room, "text": "给设备 P-101 添加规则 压力超过 8.5 告警"})
    _approve_in_chat(chat, room, "demo.industrial.save_rule")
    task = task_in(stack, room, "rule-desk", ("unverified",))
    assert "check whether demo.industrial.save_rule was carried out" in task["check"]
    assert key in task["check"] and "it was not repeated" in task["check"]
    assert len(_rules(stack, key)) == 1  # saved once, the answer lost on the way back

    chat.send({"type": "message.received", "session_id": room, "text": "给设备 P-101 添加规则 压力超过 8.5 告警"})
    _approve_in_chat(chat, room, "demo.industrial.enable_rule")  # no save asked for: found by its key
    saves = [r for r in chat.replies(room) if "wants to call demo.industrial.save_rule" in r["text"]]
    assert len(saves) == 1  # only the first attempt's
    text = chat.wait(room, lambda r: [m for m in r if "已保存并启用" in m["text"]], "the retry's answer")[0]["text"]
    assert f"此前已按幂等键 {key} 保存过，没有重复创建" in text
    [rule] = _rules(stack, key)
    assert rule["enabled"] is True


# ---------------------------------------------------------------- scenario 3: non-message events


def test_a_new_member_is_welcomed_in_the_group(stack: ComposeStack, chat: Chat) -> None:
    room = conversation()
    chat.send({"type": "group.member_joined", "session_id": room, "user_id": "u42"})
    assert chat.wait(room, lambda r: r, "the welcome")[0]["text"] == "欢迎 u42 加入！"
    assert [i["kind"] for i in chat.items(room)] == ["member_joined", "message"]


def test_a_friend_request_is_answered_only_after_an_approval(stack: ComposeStack, chat: Chat) -> None:
    room = conversation()
    sent = chat.send({"type": "friend.request_received", "user_id": "u43", "note": "设备组的小王",
                      "shown_in": room})
    request_id = sent["request_id"] if "request_id" in sent else sent["ids"]["request_id"]

    def pending() -> dict[str, Any] | None:
        listed = json.loads(stack.cli("approvals", "list", "--json").stdout)
        return next((a for a in listed if a["tool"] == "event_respond_friend_request"
                     and a["state"] == "pending" and a["agent"] == "friend-desk"), None)

    approval = poll_sync(pending, timeout=30, what="the friend desk's approval request", interval=0.5)
    [request] = [i for i in chat.items(room) if i["kind"] == "friend_request"]
    assert request["request_id"] == request_id and request["response"] is None  # nothing answered yet
    granted = stack.cli("approvals", "grant", approval["id"])
    assert granted.returncode == 0, granted.stderr

    def answered() -> dict[str, Any] | None:
        found = next(i for i in chat.items(room) if i["kind"] == "friend_request")["response"]
        return found if found else None

    response = poll_sync(answered, timeout=30, what="the friend request's answer", interval=0.3)
    assert response["accept"] is True and "u43" in response["message"]


def test_a_deleted_message_is_routed_as_itself_and_nothing_is_said(stack: ComposeStack, chat: Chat) -> None:
    room = conversation()
    said = chat.send({"type": "message.received", "session_id": room, "text": "北京天气"})
    chat.wait(room, lambda r: r, "the weather desk's answer")
    message_id = said["message_id"] if "message_id" in said else said["ids"]["message_id"]
    chat.send({"type": "message.deleted", "session_id": room, "message_id": message_id, "user_id": "u1"})
    task = task_in(stack, room, "deletion-log", ("succeeded",))
    assert task["event_type"] == "message.deleted"  # not made into a message.received
    assert task["delivered"] is False and [s for s in task["steps"] if s["kind"] == "delivery"] == []
    shown = [i for i in chat.items(room) if i["kind"] == "message"]
    assert [(m["direction"], m["deleted"]) for m in shown] == [("in", True), ("out", False)]
    assert len(chat.replies(room)) == 1  # the weather answer only: the deletion was not answered


# ---------------------------------------------------------------- the same relay with a model


def test_the_llm_relay_plans_the_same_calls_through_the_profiles_model_endpoint(
        stack: ComposeStack, chat: Chat, model: FakeOpenAI) -> None:
    applied = stack.cli("apply", "-f", "deploy/demo/llm/relay-llm.yml")
    assert applied.returncode == 0, applied.stderr
    room = conversation()
    chat.send({"type": "message.received", "session_id": room, "text": "/ai 设备 C-3 最近的告警和资产档案"})
    text = chat.wait(room, lambda r: r, "the llm relay's answer")[0]["text"]
    assert text == "ALM-1003 discharge pressure 7.9 bar over limit 7.5 bar【来源：工业系统】；" \
                   "AS-0003 Screw compressor C-3【来源：资产系统】"
    task = task_in(stack, room, "relay-llm", ("succeeded",))
    assert [s["name"] for s in task["steps"] if s["kind"] == "tool"] == [
        "demo.industrial.find_device", "demo.industrial.list_alarms", "demo.assets.search_assets",
        "demo.assets.get_asset_profile"]
    first = model.requests[0]
    assert "Never invent a link" in first.system and "先确认设备" in first.system


def test_the_stack_sends_its_traces_where_compose_points_them(stack: ComposeStack) -> None:
    """compose.yaml points every service at Jaeger's OTLP port; the harness listens there in its
    place. Whatever ran before this test left one trace per event, from the bridge to the app."""
    def traced() -> set[str] | None:
        services = {s.service for s in stack.traces.spans}
        wanted = {"aurora-event-bridge", "aurora-router", "aurora-runner", "aurora-mcp-gateway"}
        return services if wanted <= services else None

    poll_sync(traced, timeout=30, what="spans from every service at the OTLP port compose names")
    runs = [s for s in stack.traces.spans if s.service == "aurora-runner" and s.name == "process run"]
    by_id = {s.span_id: s for s in stack.traces.spans}
    assert any(by_id.get(r.parent_id or "") is not None and by_id[r.parent_id or ""].service == "aurora-router"
               for r in runs), "no run span is the child of the router's span"
