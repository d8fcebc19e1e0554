"""Platform tools: offered only with the event's target, the app's capability, the agent's leave."""

from __future__ import annotations

from services.mcp_gateway.calls.platform_tools import PLATFORM_TOOLS, app_arguments, check, missing_required
from shared.config.appconfig import parse_apps_config

APPS = parse_apps_config({"apps": {"chat": {
    "package": "im.polaris.qq",
    "mcp": {"command": ["python"]},
    "platform": {"reply": "send_message", "get_actor": "get_user_info"},
}}})
CHAT = APPS.get("im.polaris.qq")
DELIVERY = {"reply_target": {"app": "im.polaris.qq", "session_id": "group_1", "message_id": "m1"}}


def test_event_reply_is_offered_when_the_event_has_a_conversation_and_the_app_can_reply() -> None:
    assert check(PLATFORM_TOOLS["event_reply"], delivery=DELIVERY, app=CHAT, allowed_platform_tools=()) is None


def test_without_a_reply_target_event_tools_are_not_offered() -> None:
    refusal = check(PLATFORM_TOOLS["event_reply"], delivery={"reply_target": None}, app=CHAT,
                    allowed_platform_tools=())
    assert refusal is not None and refusal.reason == "event_target_unavailable"


def test_each_exclusion_has_its_reason() -> None:
    react = check(PLATFORM_TOOLS["event_react"], delivery=DELIVERY, app=CHAT, allowed_platform_tools=())
    assert react is not None and react.reason == "adapter_api_unsupported"
    friend = check(PLATFORM_TOOLS["event_respond_friend_request"], delivery=DELIVERY, app=CHAT,
                   allowed_platform_tools=())
    assert friend is not None and friend.reason in ("adapter_api_unsupported", "event_incompatible")
    send = check(PLATFORM_TOOLS["platform_send_message"], delivery=DELIVERY, app=CHAT, allowed_platform_tools=())
    assert send is not None and send.reason == "not_allowed"


def test_the_reply_goes_to_the_frozen_target_whatever_the_agent_says() -> None:
    schema = {"type": "object", "properties": {"session_id": {}, "text": {}, "reply_to": {}},
              "required": ["session_id", "text"]}
    arguments = app_arguments(PLATFORM_TOOLS["event_reply"], {"text": "hi", "session_id": "elsewhere"},
                              DELIVERY, schema)
    assert arguments == {"session_id": "group_1", "text": "hi", "reply_to": "m1"}
    assert missing_required(arguments, schema) == []


def test_a_questions_interaction_id_reaches_an_app_that_takes_it_and_no_other() -> None:
    asked = {"text": "哪一台？\n1. P-101\n2. P-102\n（请回复选项编号）", "interaction_id": "ix.t1.pick"}
    takes_it = {"type": "object", "properties": {"session_id": {}, "text": {}, "interaction_id": {}}}
    assert app_arguments(PLATFORM_TOOLS["event_reply"], asked, DELIVERY, takes_it) == {
        "session_id": "group_1", "text": asked["text"], "interaction_id": "ix.t1.pick"}
    text_only = {"type": "object", "properties": {"session_id": {}, "text": {}}}  # an IM that sends text only
    assert app_arguments(PLATFORM_TOOLS["event_reply"], asked, DELIVERY, text_only) == {
        "session_id": "group_1", "text": asked["text"]}
    assert "interaction_id" in PLATFORM_TOOLS["event_reply"].parameters["properties"]


def test_a_question_id_no_answer_could_carry_is_dropped_and_the_reply_goes_as_text() -> None:
    takes_it = {"type": "object", "properties": {"session_id": {}, "text": {}, "interaction_id": {}}}
    made_up = ["2019-03-15T21:48:38ZXMzSgjcIaHBJ, 2019-03-15T21:48:38ZXMzSgjcIaHBJ", "x" * 129, "", 7]
    for interaction_id in made_up:
        sent = app_arguments(PLATFORM_TOOLS["event_reply"], {"text": "hi", "interaction_id": interaction_id},
                             DELIVERY, takes_it)
        assert sent == {"session_id": "group_1", "text": "hi"}, interaction_id
    longest = "i" * 128
    assert app_arguments(PLATFORM_TOOLS["event_reply"], {"text": "hi", "interaction_id": longest}, DELIVERY,
                         takes_it)["interaction_id"] == longest
