"""The chat page's pure parts: webhook bodies → events, numbered questions, the conversation view."""

from __future__ import annotations

from typing import Any

import pytest

from apps.aurora_app_chat.conversation import Received, conversation_view, parse_question
from apps.aurora_app_chat.events import BadEvent, friend_request, message_received, parse_body
from services.runner.tasks.interactions import question_text


def test_a_runner_question_is_parsed_with_its_numbered_options_and_the_id_sent_beside_it() -> None:
    text = question_text("Which pump?", [{"label": "Pump P-101"}, {"name": "Pump P-102"}], locale="en")
    assert parse_question(text, "ix.t1.pick") == {
        "interaction_id": "ix.t1.pick", "question": "Which pump?",
        "options": [{"number": 1, "label": "Pump P-101"}, {"number": 2, "label": "Pump P-102"}],
        "hint": "answer with the number of your choice"}
    zh = parse_question(question_text("哪台泵？", ["P-101", "P-102"]), "ix.t1.pick")
    assert zh is not None and zh["question"] == "哪台泵？" and zh["hint"] == "请回复选项编号"


def test_a_free_text_question_has_no_options_and_plain_text_is_no_question() -> None:
    free = parse_question(question_text("Which device?", []), "ix.t2.ask")
    assert free is not None and free["options"] == [] and free["question"] == "Which device?"
    assert parse_question("1. first\n2. second") is None
    assert parse_question("just a question?", "ix.t3.ask") == {
        "interaction_id": "ix.t3.ask", "question": "just a question?", "options": [], "hint": ""}
    assert parse_question("see (answer with 1; interaction ix.a.b) above\nthanks") is None
    assert parse_question("") is None


def test_an_older_question_naming_its_interaction_in_its_last_line_is_parsed_too() -> None:
    text = ("helper wants to call test.chat.send_message (write) with {}.\n1. allow\n2. refuse\n"
            "(answer with the number of your choice; interaction apr.a-1)")
    parsed = parse_question(text)
    assert parsed is not None and parsed["interaction_id"] == "apr.a-1"
    assert [o["label"] for o in parsed["options"]] == ["allow", "refuse"]


def _received(*emissions: Any) -> Received:
    received = Received()
    for emission in emissions:
        received.add(emission.params("bot"), shown_in=emission.shown_in)
    return received


def test_the_view_keeps_to_its_conversation_and_the_first_answer_counts() -> None:
    said = message_received("group_1", "hi", "u1")
    other = message_received("group_2", "elsewhere", "u2")
    request = friend_request("u1", "hey", shown_in="group_1")
    received = _received(said, other, request, *(parse_body({
        "type": "interaction.submitted", "session_id": "group_1", "interaction_id": "ix.t.s", "value": v})
        for v in ("2", "1")))
    sent: list[dict[str, Any]] = [
        {"kind": "message", "message_id": "msg-1", "session_id": "group_1", "at": "2026-01-01T00:00:00+00:00",
         "text": question_text("Pick", ["a", "b"]), "interaction_id": "ix.t.s", "reply_to": said.ids["message_id"]},
        {"kind": "reaction", "session_id": "group_1", "message_id": said.ids["message_id"], "reaction": "👍",
         "at": "2026-01-01T00:00:01+00:00"},
        {"kind": "reaction", "session_id": "group_1", "message_id": "unknown", "reaction": "x", "at": "x"},
        {"kind": "message", "message_id": "msg-2", "session_id": "group_2", "text": "no", "at": "x"},
    ]
    view = conversation_view("group_1", received.records(), sent)
    kinds = [item["kind"] for item in view["items"]]
    # the sent question's timestamp is older than anything received: sorted first (a whole-second
    # timestamp has no fraction, and still sorts by time)
    assert kinds == ["message", "message", "friend_request", "answer", "answer"]
    question, message = view["items"][0], view["items"][1]
    assert question["question"]["answer"]["value"] == "2"
    assert message["reactions"] == ["👍"] and message["text"] == "hi"
    assert "elsewhere" not in str(view) and "msg-2" not in str(view)
    # an unreadable timestamp sorts first rather than failing the view
    other_view = conversation_view("group_2", received.records(), sent)
    assert [item["text"] for item in other_view["items"]] == ["no", "elsewhere"]


@pytest.mark.parametrize(("body", "field"), [
    ({"type": "message.received", "text": "x"}, "session_id"),
    ({"type": "friend.request_received", "user_id": "u", "note": 3}, "note"),
    ({"type": "message.deleted", "session_id": "g"}, "message_id"),
    ({"type": "interaction.submitted", "session_id": "g", "interaction_id": "i", "value": ""}, "value"),
])
def test_bad_bodies_name_the_field(body: dict[str, Any], field: str) -> None:
    with pytest.raises(BadEvent) as caught:
        parse_body(body)
    assert [where for where, _ in caught.value.problems] == [field]


def test_received_keeps_a_bounded_history() -> None:
    received = Received(limit=3)
    for n in range(5):
        received.add(message_received("g", f"m{n}", "u1").params("bot"))
    assert [r["data"]["text"] for r in received.records()] == ["m2", "m3", "m4"]
