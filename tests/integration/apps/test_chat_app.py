"""The simulated IM app (`apps.aurora_app_chat`) over stdio with a real MCP client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared.contracts.validation import validate_native_event
from tests.harness.chat_app import chat_app

WRITES = {"send_message", "react", "respond_friend_request"}
READS = {"get_user_info", "list_sent"}
SIMULATORS = {"simulate_message", "simulate_friend_request", "simulate_member_joined", "simulate_interaction_answer"}


async def test_tools_are_annotated_by_their_side_effect() -> None:
    async with chat_app() as chat:
        tools = {t.name: t for t in (await chat.session.list_tools()).tools}
    assert set(tools) == WRITES | READS | SIMULATORS
    for name in READS:
        read_hints = tools[name].annotations
        assert read_hints is not None and read_hints.read_only_hint is True, name
    for name in WRITES | SIMULATORS:
        hints = tools[name].annotations
        assert hints is not None and hints.read_only_hint is False and hints.destructive_hint is False, name
    for name, tool in tools.items():
        assert tool.description, f"{name} has no description"
    send = tools["send_message"].input_schema
    assert set(send["required"]) == {"session_id", "text"} and "reply_to" in send["properties"]
    assert set(tools["respond_friend_request"].input_schema["required"]) == {"request_id", "accept"}


async def test_sends_are_recorded_in_memory_and_in_the_log_file(tmp_path: Path) -> None:
    log = tmp_path / "sent.jsonl"
    async with chat_app(log) as chat:
        sent = await chat.call("send_message", session_id="group_1", text="你好", reply_to="in-1")
        await chat.call("react", session_id="group_1", message_id="in-1", reaction="👍")
        await chat.call("send_message", session_id="private_u2", text="hi")
        listed = await chat.call("list_sent", session_id="group_1")
        everything = await chat.call("list_sent")
    assert sent["message_id"].startswith("msg-") and sent["text"] == "你好" and sent["reply_to"] == "in-1"
    assert [r["kind"] for r in listed["items"]] == ["message", "reaction"] and listed["count"] == 2
    assert everything["count"] == 3
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [r["kind"] for r in lines] == ["message", "reaction", "message"]
    assert lines[0]["text"] == "你好" and lines[1]["reaction"] == "👍"


async def test_without_a_log_file_list_sent_shows_this_process_only() -> None:
    async with chat_app() as chat:
        assert (await chat.call("list_sent"))["count"] == 0
        await chat.call("send_message", session_id="g", text="x")
        assert (await chat.call("list_sent"))["count"] == 1


async def test_the_log_file_survives_a_restart(tmp_path: Path) -> None:
    log = tmp_path / "sent.jsonl"
    async with chat_app(log) as chat:
        await chat.call("send_message", session_id="g", text="before")
    async with chat_app(log) as chat:
        await chat.call("send_message", session_id="g", text="after")
        listed = await chat.call("list_sent", session_id="g")
    assert [r["text"] for r in listed["items"]] == ["before", "after"]
    assert len({r["pid"] for r in listed["items"]}) == 2


async def test_bad_writes_are_tool_errors_and_send_nothing(tmp_path: Path) -> None:
    log = tmp_path / "sent.jsonl"
    async with chat_app(log) as chat:
        assert "empty" in await chat.error("send_message", session_id="g", text="  ")
        assert "empty" in await chat.error("react", session_id="g", message_id="m", reaction="")
    assert not log.exists() or log.read_text() == ""


async def test_simulate_message_emits_a_valid_native_message_received(tmp_path: Path) -> None:
    async with chat_app(startup={"bot": "bot-7"}) as chat:
        reply = await chat.call("simulate_message", session_id="group_42", text="在吗", user_id="u9")
        event = await chat.next_event()
    validate_native_event(event)
    payload = event["payload"]
    assert event["header"]["method"] == "aurora/event"
    assert payload["type"] == "message.received"
    assert payload["session_id"] == "group_42"
    assert payload["actor"] == {"id": "u9", "kind": "user"}
    assert payload["subject"] == {"kind": "message", "id": reply["message_id"]}
    assert payload["data"] == {"text": "在吗"}
    assert payload["bot"] == "bot-7"
    assert payload["source_event_type"] == "message.group"
    assert reply["event"] == event


async def test_a_friend_request_is_answered_once(tmp_path: Path) -> None:
    async with chat_app(tmp_path / "sent.jsonl") as chat:
        reply = await chat.call("simulate_friend_request", user_id="u3", note="加个好友")
        event = await chat.next_event()
        validate_native_event(event)
        assert event["payload"]["type"] == "friend.request_received"
        assert event["payload"]["subject"] == {"kind": "friend_request", "id": reply["request_id"]}
        assert event["payload"]["actor"] == {"id": "u3", "kind": "user"}
        assert event["payload"]["data"] == {"note": "加个好友"}
        assert "session_id" not in event["payload"]
        answered = await chat.call("respond_friend_request", request_id=reply["request_id"], accept=True,
                                   message="welcome")
        assert answered["user_id"] == "u3" and answered["accept"] is True
        assert "already accepted" in await chat.error("respond_friend_request", request_id=reply["request_id"],
                                                      accept=False)
        assert (await chat.call("list_sent"))["count"] == 1


async def test_member_joined_and_user_info() -> None:
    async with chat_app() as chat:
        await chat.call("simulate_member_joined", session_id="group_5", user_id="u5")
        event = await chat.next_event()
        info = await chat.call("get_user_info", actor_id="u5")
        stranger = await chat.call("get_user_info", actor_id="nobody")
    validate_native_event(event)
    assert event["payload"]["type"] == "group.member_joined"
    assert event["payload"]["session_id"] == "group_5"
    assert event["payload"]["actor"] == {"id": "u5", "kind": "user"}
    assert event["payload"]["subject"] == {"kind": "member", "id": "u5"}
    assert info == {"id": "u5", "kind": "user", "nickname": "user-u5", "known": True, "sessions": ["group_5"]}
    assert stranger["known"] is False and stranger["sessions"] == []


@pytest.mark.parametrize("tool", sorted(READS))
async def test_read_tools_send_nothing(tmp_path: Path, tool: str) -> None:
    log = tmp_path / "sent.jsonl"
    async with chat_app(log) as chat:
        await chat.call(tool, **({"actor_id": "u1"} if tool == "get_user_info" else {}))
    assert not log.exists()
