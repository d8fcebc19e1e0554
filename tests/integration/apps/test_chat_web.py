"""The chat app's webhook and conversation view: the real app process over stdio (a real MCP
client on the other end, as the supervisor would be) and real HTTP requests to its web port.
Bodies are posted signed, as an IM platform's webhook would (tests/harness/chat_webhook.py);
who may post and from where is tests/integration/apps/test_chat_web_callers.py."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from shared.contracts.validation import validate_native_event
from tests.harness.chat_web import chat_web, text_of
from tests.harness.waiting import poll

EXAMPLES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    # body → what the event's payload must hold
    "message.received": (
        {"type": "message.received", "session_id": "group_7", "text": "在吗", "user_id": "u9"},
        {"session_id": "group_7", "actor": {"id": "u9", "kind": "user"}, "data": {"text": "在吗"},
         "source_event_type": "message.group"}),
    "group.member_joined": (
        {"type": "group.member_joined", "session_id": "group_7", "user_id": "u5"},
        {"session_id": "group_7", "actor": {"id": "u5", "kind": "user"}, "subject": {"kind": "member", "id": "u5"},
         "data": {"user_id": "u5"}, "source_event_type": "notice.group_increase"}),
    "friend.request_received": (
        {"type": "friend.request_received", "user_id": "u3", "note": "加个好友", "shown_in": "private_u3"},
        {"actor": {"id": "u3", "kind": "user"}, "data": {"note": "加个好友"}, "source_event_type": "request.friend"}),
    "interaction.submitted": (
        {"type": "interaction.submitted", "session_id": "private_u1", "interaction_id": "ix.t1.pick", "value": "2"},
        {"session_id": "private_u1", "actor": {"id": "u1", "kind": "user"},
         "subject": {"kind": "interaction", "id": "ix.t1.pick"},
         "data": {"interaction_id": "ix.t1.pick", "value": "2"}, "source_event_type": "message.interaction"}),
    "message.deleted": (
        {"type": "message.deleted", "session_id": "group_7", "message_id": "in-abc"},
        {"session_id": "group_7", "actor": {"id": "im", "kind": "system"},
         "subject": {"kind": "message", "id": "in-abc"}, "data": {}, "source_event_type": "notice.group_recall"}),
}


async def test_each_webhook_event_is_emitted_as_a_native_event(tmp_path: Path) -> None:
    async with chat_web(tmp_path) as web:
        for event_type, (body, expected) in EXAMPLES.items():
            reply = await web.post(body)
            assert reply.status_code == 202, reply.text
            answer = reply.json()
            event = await web.chat.next_event()
            validate_native_event(event)
            payload = event["payload"]
            assert payload["type"] == event_type and answer["type"] == event_type
            assert payload["bot"] == "bot-web"
            for key, value in expected.items():
                assert payload[key] == value, (event_type, key, payload)
            assert answer["event"] == event  # what the caller is told is what the platform got
            if event_type == "message.received":
                assert payload["subject"] == {"kind": "message", "id": answer["message_id"]}
            if event_type == "friend.request_received":
                assert "session_id" not in payload and "shown_in" not in json.dumps(payload)
                assert payload["subject"] == {"kind": "friend_request", "id": answer["request_id"]}


BAD_BODIES: list[tuple[Any, str]] = [
    ({"type": "message.received", "session_id": "g"}, "text: Field required"),
    ({"type": "message.received", "session_id": "g", "text": "   "}, "text: must not be blank"),
    ({"type": "message.received", "session_id": "g h", "text": "x"}, "session_id: must be an id without blanks"),
    ({"type": "message.received", "session_id": "g", "text": "x", "colour": "red"},
     "colour: unknown field (remove it)"),
    ({"type": "message.received", "session_id": 7, "text": "x"}, "session_id: Input should be a valid string"),
    ({"type": "message.sent", "session_id": "g"}, "type: must be one of message.received, group.member_joined"),
    ({"session_id": "g"}, "type: must be one of"),
    (["message.received"], "(body): must be a JSON object, got list"),
    ({"type": "interaction.submitted", "session_id": "g", "value": "1"}, "interaction_id: Field required"),
    ({"type": "group.member_joined", "session_id": "g"}, "user_id: Field required"),
]


async def test_bad_bodies_are_refused_naming_the_field_and_emit_nothing(tmp_path: Path) -> None:
    async with chat_web(tmp_path) as web:
        for n, (body, needle) in enumerate(BAD_BODIES):
            reply = await web.post(body)
            assert reply.status_code == 422, (body, reply.text)
            error = reply.json()["error"]
            assert error["code"] == "invalid_event" and needle in error["message"], (body, error)
            assert all(set(p) == {"field", "problem"} for p in error["problems"])
            # nothing was emitted: the next event is the good one sent after
            good = await web.post({"type": "message.received", "session_id": "g", "text": f"ok {n}"})
            assert good.status_code == 202
            assert (await web.chat.next_event())["payload"]["data"] == {"text": f"ok {n}"}


async def test_not_json_too_large_and_wrong_media_type_are_4xx(tmp_path: Path) -> None:
    async with chat_web(tmp_path) as web:
        bad_json = await web.http.post("/events", content=b"{nope", headers={"content-type": "application/json"})
        assert bad_json.status_code == 400 and bad_json.json()["error"]["code"] == "bad_json"
        # nested far past any event's shape (the parser would recurse out of its stack): 400, not 500
        for deep in (b"[" * 20_000 + b"]" * 20_000, b'{"a":' * 10_000 + b"1" + b"}" * 10_000):
            refused = await web.http.post("/events", content=deep, headers={"content-type": "application/json"})
            assert refused.status_code == 400, refused.text
            assert refused.json()["error"] == {"code": "bad_json",
                                               "message": "the body nests arrays or objects deeper than 32 levels"}
        strings = await web.post({"type": "message.received", "session_id": "g", "text": "[[[[" * 20 + "{" * 20})
        assert strings.status_code == 202  # brackets inside a string are text, not nesting
        assert (await web.chat.next_event())["payload"]["data"]["text"].startswith("[[[[")
        form = await web.http.post("/events", data={"type": "message.received"})
        assert form.status_code == 415 and "application/json" in form.json()["error"]["message"]
        huge = await web.post({"type": "message.received", "session_id": "g", "text": "x" * 70_000})
        assert huge.status_code == 413 and huge.json()["error"]["code"] == "too_large"
        assert (await web.http.get("/events")).status_code == 405
        good = await web.post({"type": "message.received", "session_id": "g", "text": "after"})
        assert good.status_code == 202
        assert (await web.chat.next_event())["payload"]["data"] == {"text": "after"}


async def test_before_the_platform_connects_events_are_refused_with_503(tmp_path: Path) -> None:
    async with chat_web(tmp_path, initialize=False) as web:
        early = await web.post({"type": "message.received", "session_id": "g", "text": "too early"})
        assert early.status_code == 503 and early.headers["retry-after"] == "1"
        assert early.json()["error"]["code"] == "not_connected"
        assert (await web.http.get("/healthz")).json() == {"ok": True, "connected": False}
        assert (await web.view("g"))["items"] == []  # refused means not shown either
        await web.chat.session.initialize()
        await web.connected()
        late = await web.post({"type": "message.received", "session_id": "g", "text": "now"})
        assert late.status_code == 202
        assert (await web.chat.next_event())["payload"]["data"] == {"text": "now"}


QUESTION = ("Several assets match “pump”: which one do you mean?\n1. Circulation pump P-101\n"
            "2. Circulation pump P-102\n(answer with the number of your choice)")


async def test_the_conversation_view_shows_messages_reactions_questions_and_answers(tmp_path: Path) -> None:
    async with chat_web(tmp_path, log_file=tmp_path / "sent.jsonl") as web:
        said = (await web.post({"type": "message.received", "session_id": "group_1", "text": "where is the pump?",
                                "user_id": "u1"})).json()
        await web.chat.call("react", session_id="group_1", message_id=said["message_id"], reaction="👀")
        await web.chat.call("send_message", session_id="group_1", text=QUESTION, reply_to=said["message_id"],
                            interaction_id="ix.t-9.pick")
        await web.chat.call("send_message", session_id="elsewhere", text="not here")
        await web.post({"type": "interaction.submitted", "session_id": "group_1", "interaction_id": "ix.t-9.pick",
                        "value": "2"})
        await web.post({"type": "group.member_joined", "session_id": "group_1", "user_id": "u5"})
        asked = (await web.post({"type": "friend.request_received", "user_id": "u1", "note": "hi",
                                 "shown_in": "group_1"})).json()
        await web.chat.call("respond_friend_request", request_id=asked["request_id"], accept=True, message="ok")
        await web.chat.call("simulate_message", session_id="group_1", text="gone soon", user_id="u2")
        gone = (await web.chat.next_event(), await web.chat.next_event(), await web.chat.next_event(),
                await web.chat.next_event(), await web.chat.next_event())[-1]["payload"]["subject"]["id"]
        await web.post({"type": "message.deleted", "session_id": "group_1", "message_id": gone, "user_id": "u2"})
        view = await web.view("group_1")
    kinds = [(i["kind"], i.get("direction")) for i in view["items"]]
    assert kinds == [("message", "in"), ("message", "out"), ("answer", None), ("member_joined", None),
                     ("friend_request", None), ("message", "in")], kinds
    said_item, question_item, answer, joined, request, deleted = view["items"]
    assert said_item["text"] == "where is the pump?" and said_item["user_id"] == "u1"
    assert said_item["reactions"] == ["👀"] and said_item["deleted"] is False
    question = question_item["question"]
    assert question["interaction_id"] == "ix.t-9.pick"
    assert question["question"] == "Several assets match “pump”: which one do you mean?"
    assert question["options"] == [{"number": 1, "label": "Circulation pump P-101"},
                                   {"number": 2, "label": "Circulation pump P-102"}]
    assert question["answer"]["value"] == "2" and question["answer"]["user_id"] == "u1"
    assert question_item["reply_to"] == said["message_id"]
    assert answer["value"] == "2" and joined["user_id"] == "u5"
    assert request["request_id"] == asked["request_id"] and request["response"]["accept"] is True
    assert request["response"]["message"] == "ok"
    assert deleted["text"] == "gone soon" and deleted["deleted"] is True
    assert "not here" not in json.dumps(view)


async def test_a_port_in_use_leaves_the_app_working_without_a_page(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        async with chat_web(tmp_path, port=str(port)) as web:
            await web.chat.call("send_message", session_id="g", text="still works")

            async def said() -> bool:
                return "chat page not served" in text_of(web.stderr)

            await poll(said, timeout=10, what="the page's bind failure on stderr")
            log = text_of(web.stderr)
            assert "CHAT_WEB_PORT" in log and str(port) in log
