"""The seeds' three scenarios on the stack `docker compose up` runs (compose.yaml's commands as
local processes, see `compose_stack`), driven the way a person on the chat page drives them —
through the chat app's webhook (`POST /events`) — and checked on what the page shows
(`GET /conversations/<id>`), plus the task records the CLI shows. Each runs twice on the one
stack of the module: with the playbook agents of deploy/demo/, then with the `llm` agents of
deploy/demo/llm/ (compose's `llm` profile) against the profile's model endpoint, faked.

1. cross-system read relay: alarms → asset search → profile, both sources named; two matching
   assets → a numbered question, answered, the task resumes; no asset → the alarm data stays.
2. reliable write loop: draft → approval in the chat → save (idempotency key) → read back →
   enable (approval); a failed enable is `partial` and says what is saved and what not; a lost
   save response is `unverified`, says what to check, and asking again finds the rule by its key;
   a refused save changes nothing and the user is told so.
3. non-message events: a welcome in the group; a friend request answered only after an approval;
   `message.deleted` routed as itself, with nothing sent.

Every message the conversation shows is checked (`Chat.speaks`): no JSON, no ids, the platform's
own sentences in the agents' language (the demo's, Chinese); with `locale: en` they are English.
Any other message is answered with what the demo can do.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aurora_cli.devseed import DEMO_DIR
from tests.e2e.compose_stack import SERVICES, ComposeStack, interpolate
from tests.e2e.demo_chat import (
    CJK,
    LLM,
    PLAYBOOK,
    Chat,
    Modes,
    Variant,
    conversation,
    rules,
    task_in,
    tool,
    tool_steps,
)
from tests.e2e.demo_model import demo_model
from tests.fakes.openai_server import FakeOpenAI
from tests.harness.waiting import poll_sync

pytestmark = pytest.mark.timeout(600)
MODEL = interpolate(SERVICES["runner"]["environment"]["AURORA_MODEL"])


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAI]:
    """The `llm` profile's model server, faked (the only fake: a model is a paid API): compose's
    runners point at `ollama:11434`, which the stack rewrites to this server's port."""
    fake = FakeOpenAI().start()
    fake.script(MODEL, demo_model)
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


@pytest.fixture(scope="module")
def modes(stack: ComposeStack, tmp_path_factory: pytest.TempPathFactory) -> Modes:
    return Modes(stack, tmp_path_factory.mktemp("modes"))


@pytest.fixture(scope="module", params=[PLAYBOOK, LLM], ids=lambda v: v.name)
def variant(request: pytest.FixtureRequest, modes: Modes) -> Variant:
    """Module-scoped, so pytest runs every playbook case, then switches once to the llm agents."""
    chosen: Variant = request.param
    modes.use(chosen)
    if chosen is LLM:
        for agent in (LLM.relay, LLM.rules, LLM.greeter, LLM.friend):
            assert f"agent/{agent}" in modes.llm_output, modes.llm_output
    return chosen


@pytest.fixture(scope="module")
def chat(stack: ComposeStack) -> Iterator[Chat]:
    """One for the module: a user id stays with the page session that first signed in as it."""
    opened = Chat(stack)
    try:
        yield opened
    finally:
        opened.people.close()


def test_demo_init_applied_the_scenarios_and_published_the_asset_register_from_its_openapi(
        stack: ComposeStack) -> None:
    assert "openapiimport/assets" in stack.demo_init_output
    for name in ("relay-desk", "rule-desk", "friend-desk", "greeter", "deletion-log"):
        assert f"agent/{name}" in stack.demo_init_output
    assert "relay-llm" not in stack.demo_init_output  # no model needed: the llm agents are the profile's
    shown = json.loads(stack.cli_here("tools", "show", "demo.assets.search_assets", "--json").stdout)
    assert shown["state"] == "PUBLISHED" and shown["source"] == "openapi" and shown["system"] == "assets"
    again = stack.cli("apply", "-f", "deploy/demo/", env=stack.demo_init_env())
    assert again.returncode == 0 and "created" not in again.stdout and "updated" not in again.stdout, again.stdout


# ---------------------------------------------------------------- scenario 1: the read relay


def test_relay_names_the_alarm_and_the_asset_with_their_sources(
        stack: ComposeStack, chat: Chat, variant: Variant, model: FakeOpenAI) -> None:
    room = conversation()
    chat.say(room, "设备 C-3 最近的告警和资产档案")
    text = chat.wait(room, lambda r: r, "the relay's answer")[0]["text"]
    assert "ALM-1003" in text and "discharge pressure 7.9 bar" in text and "【来源：工业系统】" in text
    assert "AS-0003 Screw compressor C-3" in text and "【来源：资产系统】" in text
    task = task_in(stack, room, variant.relay, ("succeeded",))
    assert tool_steps(task) == ["demo.industrial.find_device", "demo.industrial.list_alarms",
                                "demo.assets.search_assets", "demo.assets.get_asset_profile"]
    search = next(s for s in task["steps"] if s["name"] == "demo.assets.search_assets")
    assert search["arguments"] == {"deviceName": "Compressor C-3"}  # the alarm's device name, relayed
    if variant is LLM:  # the agent's prompt and skills reached the profile's model
        assert any("Never invent a link" in r.system and "先确认设备" in r.system for r in model.requests)
    chat.speaks(stack, room)


def test_two_matching_assets_ask_which_and_the_answer_resumes_the_task(
        stack: ComposeStack, chat: Chat, variant: Variant) -> None:
    room = conversation()
    chat.say(room, "设备 P-101 最近的告警和资产档案")
    question = chat.question(room)
    assert [o["label"] for o in question["options"]] == ["Circulation pump P-101 (pump body)",
                                                        "Drive motor of pump P-101"]
    assert task_in(stack, room, variant.relay, ("awaiting_approval",))["interaction_id"] == \
        question["interaction_id"]
    chat.answer(room, question, "2")
    replies = chat.wait(room, lambda r: r if len(r) >= 2 else None, "the answer after the choice")
    assert "AS-0002 Drive motor of pump P-101" in replies[1]["text"] and "ALM-1001" in replies[1]["text"]
    assert "AS-0001" not in replies[1]["text"]
    assert chat.replies(room)[0]["question"]["answer"]["value"] == "2"  # the page shows the answer given
    task_in(stack, room, variant.relay, ("succeeded",))
    chat.speaks(stack, room)


def test_no_asset_keeps_the_alarm_and_says_the_record_is_missing(
        stack: ComposeStack, chat: Chat, variant: Variant) -> None:
    room = conversation()
    chat.say(room, "设备 F-9 最近的告警和资产档案")
    text = chat.wait(room, lambda r: r, "the relay's answer")[0]["text"]
    assert "ALM-1002" in text and "vibration 7.1 mm/s" in text
    assert "资产系统中没有与「Fan F-9」关联的资产记录（未作关联）" in text and "AS-" not in text
    task = task_in(stack, room, variant.relay, ("succeeded",))
    assert "demo.assets.get_asset_profile" not in tool_steps(task)  # no profile read: nothing to link
    if variant is PLAYBOOK:
        assert next(s for s in task["steps"] if s["id"] == "profile")["status"] == "skipped"
    chat.speaks(stack, room)


# ---------------------------------------------------------------- scenario 2: the write loop


def test_a_rule_is_drafted_approved_saved_read_back_and_enabled(
        stack: ComposeStack, chat: Chat, variant: Variant) -> None:
    room, threshold = conversation(), variant.thresholds[0]
    chat.say(room, f"给设备 P-101 添加规则 温度超过 {threshold} 告警")
    chat.approve(room, "demo.industrial.save_rule")
    chat.approve(room, "demo.industrial.enable_rule")
    text = chat.said(room, "已保存并启用", "the rule desk's answer")
    assert f"P-101 bearing temperature > {threshold} °C" in text and "单位 °C" in text and "回读与草稿一致" in text
    task = task_in(stack, room, variant.rules, ("succeeded",))
    assert tool_steps(task) == [f"demo.industrial.{name}" for name in (
        "find_device", "list_points", "draft_rule", "get_rule", "save_rule", "get_rule", "enable_rule")]
    if variant is PLAYBOOK:
        assert [s["id"] for s in task["steps"] if s["kind"] in ("tool", "verify")] == \
            ["device", "points", "draft", "existing", "save", "readback", "compare", "enable"]
    [rule] = rules(stack, f"rule:P-101:TT-204:>:{threshold}")
    assert rule["enabled"] is True and rule["threshold"] == float(threshold)
    # the approval questions name the arguments by the tool's titles, never as JSON
    [asked] = chat.approvals_asked(room, "demo.industrial.save_rule")
    for said in ("参数：", "设备：P-101", "点位：TT-204", "比较：>", f"阈值：{threshold}", "，"):
        assert said in asked["text"], asked["text"]
    chat.speaks(stack, room)


def test_a_failed_enable_ends_partial_saying_what_is_saved_and_what_not(
        stack: ComposeStack, chat: Chat, variant: Variant) -> None:
    room, threshold = conversation(), variant.thresholds[1]
    tool(stack, "demo.industrial.fail_next_enable")
    chat.say(room, f"给设备 P-101 添加规则 温度超过 {threshold} 告警")
    chat.approve(room, "demo.industrial.save_rule")
    chat.approve(room, "demo.industrial.enable_rule")
    text = chat.said(room, "没有启用", "the partial answer")
    key = f"rule:P-101:TT-204:>:{threshold}"
    assert "已完成：保存规则；未完成：启用规则" in text and key in text
    # what failed, in the user's words: the app's own error stays in the task
    assert "rule engine busy" not in text and "Error executing tool" not in text
    task = task_in(stack, room, variant.rules, ("partial",))
    assert "enable" in (task["transitions"][-1]["reason"] or "")
    enable = [s for s in task["steps"] if s["name"] == "demo.industrial.enable_rule"][-1]
    assert "rule engine busy" in enable["error"]["message"]
    [rule] = rules(stack, key)
    assert rule["enabled"] is False and rule["rule_id"] in text  # what to check: the rule, by its id
    chat.speaks(stack, room)


def test_a_refused_save_changes_nothing_and_the_user_is_told_so(
        stack: ComposeStack, chat: Chat, variant: Variant) -> None:
    room, threshold = conversation(), "96" if variant is PLAYBOOK else "86"
    chat.say(room, f"给设备 P-101 添加规则 温度超过 {threshold} 告警")
    chat.answer(room, chat.question(room, about="demo.industrial.save_rule"), "2")
    chat.said(room, "未执行：此请求所需的审批被拒绝", "the refusal's notice")
    task = task_in(stack, room, variant.rules, ("cancelled",))
    assert task["error"]["code"] == "approval_denied" and task["delivered"] is True
    assert rules(stack, f"rule:P-101:TT-204:>:{threshold}") == []
    chat.speaks(stack, room)


def test_a_lost_save_response_is_unverified_and_asking_again_finds_the_rule_by_its_key(
        stack: ComposeStack, chat: Chat, variant: Variant) -> None:
    room, threshold = conversation(), variant.thresholds[2]
    key = f"rule:P-101:PT-110:>:{threshold}"
    tool(stack, "demo.industrial.drop_next_save_response")
    chat.say(room, f"给设备 P-101 添加规则 压力超过 {threshold} 告警")
    chat.approve(room, "demo.industrial.save_rule")
    # The page says so in one short sentence: not confirmed, not repeated; what exactly to check
    # is the task's `check`, which the console and the CLI show.
    notice = chat.said(room, "无法确认", "the unverified notice")
    assert notice == ("无法确认 demo.industrial.save_rule 是否已执行（响应丢失，且没有重试），"
                      "请先到该系统核对，再决定是否重新提出。")
    task = task_in(stack, room, variant.rules, ("unverified",))
    assert "check whether demo.industrial.save_rule was carried out" in task["check"]
    assert key in task["check"] and "it was not repeated" in task["check"]
    assert task["delivered"] is True
    assert len(rules(stack, key)) == 1  # saved once, the answer lost on the way back

    chat.say(room, f"给设备 P-101 添加规则 压力超过 {threshold} 告警")
    chat.approve(room, "demo.industrial.enable_rule")  # no save asked for: found by its key
    text = chat.said(room, "已保存并启用", "the retry's answer")
    assert len(chat.approvals_asked(room, "demo.industrial.save_rule")) == 1  # only the first attempt's
    assert f"此前已按幂等键 {key} 保存过，没有重复创建" in text
    [rule] = rules(stack, key)
    assert rule["enabled"] is True
    chat.speaks(stack, room)


# ---------------------------------------------------------------- scenario 3: non-message events


def test_a_new_member_is_welcomed_in_the_group(stack: ComposeStack, chat: Chat, variant: Variant) -> None:
    room = conversation()
    chat.send({"type": "group.member_joined", "session_id": room, "user_id": "u42"})
    assert chat.wait(room, lambda r: r, "the welcome")[0]["text"] == "欢迎 u42 加入！"
    assert [i["kind"] for i in chat.items(room)] == ["member_joined", "message"]
    task = task_in(stack, room, variant.greeter, ("succeeded",))
    assert task["event_type"] == "group.member_joined"  # an event, not made into a message
    chat.speaks(stack, room)


def test_a_friend_request_is_answered_only_after_an_approval(
        stack: ComposeStack, chat: Chat, variant: Variant) -> None:
    room = conversation()
    sent = chat.send({"type": "friend.request_received", "user_id": "u43", "note": "设备组的小王",
                      "shown_in": room})
    request_id = sent["request_id"] if "request_id" in sent else sent["ids"]["request_id"]

    def pending() -> dict[str, Any] | None:
        listed = json.loads(stack.cli_here("approvals", "list", "--json").stdout)
        return next((a for a in listed if a["tool"] == "event_respond_friend_request"
                     and a["state"] == "pending" and a["agent"] == variant.friend), None)

    approval = poll_sync(pending, timeout=45, what="the friend desk's approval request", interval=0.2)
    [request] = [i for i in chat.items(room) if i["kind"] == "friend_request"]
    assert request["request_id"] == request_id and request["response"] is None  # nothing answered yet
    granted = stack.cli_here("approvals", "grant", approval["id"])
    assert granted.returncode == 0, granted.stderr

    def answered() -> dict[str, Any] | None:
        found = next(i for i in chat.items(room) if i["kind"] == "friend_request")["response"]
        return found if found else None

    response = poll_sync(answered, timeout=45, what="the friend request's answer", interval=0.1)
    assert response["accept"] is True and "u43" in response["message"]


def test_a_deleted_message_is_routed_as_itself_and_nothing_is_said(
        stack: ComposeStack, chat: Chat, variant: Variant) -> None:
    room = conversation()
    said = chat.say(room, "北京天气")
    chat.wait(room, lambda r: r, "the weather desk's answer")
    message_id = said["message_id"] if "message_id" in said else said["ids"]["message_id"]
    chat.send({"type": "message.deleted", "session_id": room, "message_id": message_id, "user_id": "u1"})
    task = task_in(stack, room, "deletion-log", ("succeeded",))
    assert task["event_type"] == "message.deleted"  # not made into a message.received
    assert task["delivered"] is False and [s for s in task["steps"] if s["kind"] == "delivery"] == []
    shown = [i for i in chat.items(room) if i["kind"] == "message"]
    assert [(m["direction"], m["deleted"]) for m in shown] == [("in", True), ("out", False)]
    assert len(chat.replies(room)) == 1  # the weather answer only: the deletion was not answered
    chat.speaks(stack, room)


def test_any_other_message_is_told_what_the_demo_can_do(stack: ComposeStack, chat: Chat, variant: Variant) -> None:
    room = conversation()
    chat.say(room, "你好，你能做什么？")
    text = chat.wait(room, lambda r: r, "the help answer")[0]["text"]
    assert text.startswith("你好！这里是 Aurora 演示") and "最近的告警和资产档案" in text and "添加规则" in text
    task = task_in(stack, room, "help-desk", ("succeeded",))
    assert task["steps"][-1]["kind"] == "delivery"  # no tool called: the weather was not asked for
    chat.speaks(stack, room)


# The playbook agents only: the llm agents' sentences come from the same catalog, and their
# answers are the stand-in model's words, not the platform's.
@pytest.mark.parametrize("variant", [PLAYBOOK], ids=lambda v: v.name, indirect=True)
def test_with_locale_en_the_platforms_sentences_are_english(
        stack: ComposeStack, chat: Chat, variant: Variant, tmp_path: Path) -> None:
    """The demo's agents applied again with `locale: en`: the approval questions, the questions'
    hints, the unverified notice and the help answer are English (the playbooks' own answers
    are their authors' words); then the demo as shipped again."""
    english = [{**doc, "locale": "en"} for path in sorted(DEMO_DIR.glob("*.yml"))
               for doc in yaml.safe_load_all(path.read_text(encoding="utf-8"))
               if doc["kind"] == "Agent" and doc["id"] in ("relay-desk", "rule-desk", "help-desk")]
    (tmp_path / "english.yml").write_text(yaml.safe_dump_all(english, allow_unicode=True), encoding="utf-8")
    applied = stack.cli_here("apply", "-f", str(tmp_path / "english.yml"))
    assert applied.returncode == 0, applied.stdout + applied.stderr
    try:
        room = conversation()
        chat.say(room, "设备 P-101 最近的告警和资产档案")
        chat.answer(room, chat.question(room), "1")
        chat.wait(room, lambda r: r if len(r) >= 2 else None, "the answer after the choice")

        threshold = "6.5"
        tool(stack, "demo.industrial.drop_next_save_response")
        chat.say(room, f"给设备 P-101 添加规则 压力超过 {threshold} 告警")
        chat.approve(room, "demo.industrial.save_rule", locale="en")
        notice = chat.said(room, "I cannot confirm", "the unverified notice")
        assert notice == ("I cannot confirm that demo.industrial.save_rule was carried out (its answer was lost, "
                          "and it was not repeated): please check in that system before asking again.")
        chat.say(room, "hello?")
        help_text = chat.said(room, "Hello! This is the Aurora demo", "the help answer")
        assert "add rule" in help_text and not CJK.search(help_text.splitlines()[0])
        chat.speaks(stack, room, locale="en")
    finally:
        again = stack.cli("apply", "-f", "deploy/demo/", env=stack.demo_init_env())
        assert again.returncode == 0, again.stdout + again.stderr


def test_the_stack_sends_its_traces_where_compose_points_them(stack: ComposeStack, chat: Chat) -> None:
    """With `--profile observability` and OTEL_EXPORTER_OTLP_ENDPOINT=http://jaeger:4318 (compose.yaml's
    comment), every service sends its spans to Jaeger's OTLP port; the harness listens there in its
    place: one trace per event, from the bridge to the app."""
    room = conversation()
    chat.say(room, "北京天气")
    chat.wait(room, lambda r: r, "the weather desk's answer")

    def traced() -> set[str] | None:
        services = {s.service for s in stack.traces.spans}
        wanted = {"aurora-event-bridge", "aurora-router", "aurora-runner", "aurora-mcp-gateway"}
        return services if wanted <= services else None

    poll_sync(traced, timeout=30, what="spans from every service at the OTLP port compose names")
    runs = [s for s in stack.traces.spans if s.service == "aurora-runner" and s.name == "process run"]
    by_id = {s.span_id: s for s in stack.traces.spans}
    assert any(by_id.get(r.parent_id or "") is not None and by_id[r.parent_id or ""].service == "aurora-router"
               for r in runs), "no run span is the child of the router's span"
