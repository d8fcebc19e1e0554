"""A form-mode elicitation as a chat question, and chat answers checked against its schema."""

from __future__ import annotations

import pytest

from apps.aurora_app_chat.conversation import parse_question
from services.mcp_gateway.calls.in_flight import CallsInFlight
from services.mcp_gateway.server_requests import elicit_form
from services.mcp_gateway.server_requests.elicit_form import (
    Answer,
    UnsupportedSchema,
    fields_of,
    parse_answer,
    question_text,
)
from shared.contracts.toolcall import ToolCallContext

SCHEMA = {
    "type": "object",
    "properties": {
        "party_size": {"type": "integer", "minimum": 1, "maximum": 12, "description": "how many people"},
        "name": {"type": "string", "minLength": 1},
        "seating": {"type": "string", "enum": ["inside", "outside"]},
        "email": {"type": "string", "format": "email"},
        "vegan": {"type": "boolean"},
        "extras": {"type": "array", "items": {"anyOf": [{"const": "cake", "title": "Cake"},
                                                       {"const": "wine", "title": "Wine"}]}},
    },
    "required": ["party_size", "name", "seating"],
}
FIELDS = fields_of(SCHEMA)


def test_the_question_numbers_the_fields_with_what_each_takes() -> None:
    text = question_text("Your booking?", FIELDS, asker="test.elicit", locale="en")
    lines = text.splitlines()
    assert lines[0] == "test.elicit asks: Your booking?"
    assert lines[1] == "[1] party_size — a whole number [1..12] (required): how many people"
    assert lines[3] == "[3] seating — one of 1) inside, 2) outside (required)"
    assert lines[6] == "[6] extras — any of 1) Cake, 2) Wine, comma-separated (optional)"
    assert lines[-1] == "(answer as “1: value | 2: value”, or “decline” or “cancel”)"
    zh = question_text("Your booking?", FIELDS, asker="test.elicit", locale="zh-CN").splitlines()
    assert zh[0] == "test.elicit 询问：Your booking?"
    assert zh[1] == "[1] party_size — 整数 [1..12] （必填）：how many people"
    assert zh[-1] == "（请按“1: 值 | 2: 值”回答，或回复“拒绝”“取消”）"
    # the chat page shows it as a question with an answer box (no option buttons for a form) …
    page = parse_question(text, "eli.1")
    assert page is not None and page["interaction_id"] == "eli.1" and page["options"] == []
    assert parse_answer("1: 2 | 2: Ada | 3: inside", FIELDS) == Answer(
        "accept", {"party_size": 2, "name": "Ada", "seating": "inside"})  # … whose one line answers it


def test_a_form_of_one_choice_is_answered_with_the_pages_buttons() -> None:
    one = fields_of({"type": "object", "properties": {"seating": {"type": "string", "enum": ["in", "out"]}}})
    page = parse_question(question_text("Where?", one, asker="app"), "eli.2")
    assert page is not None and page["options"] == [{"number": 1, "label": "in"}, {"number": 2, "label": "out"}]
    assert parse_answer("2", one) == Answer("accept", {"seating": "out"})


def test_an_answer_by_number_name_or_json_gives_typed_content() -> None:
    by_number = parse_answer("1: 4\n2: Ada\n3: 2\n5: yes\n6: 1, wine", FIELDS)
    assert by_number == Answer("accept", {"party_size": 4, "name": "Ada", "seating": "outside", "vegan": True,
                                          "extras": ["cake", "wine"]})
    by_name = parse_answer("party_size: 2; name: Bo; seating: inside; email: bo@example.com", FIELDS)
    assert by_name == Answer("accept", {"party_size": 2, "name": "Bo", "seating": "inside",
                                        "email": "bo@example.com"})
    as_json = parse_answer('{"party_size": 3, "name": "Cy", "seating": "inside"}', FIELDS)
    assert as_json == Answer("accept", {"party_size": 3, "name": "Cy", "seating": "inside"})


def test_an_unfit_answer_says_what_to_fix_field_by_field() -> None:
    problems = parse_answer("1: 40\n3: patio\n4: not-an-email", FIELDS, locale="en")
    assert problems == ["party_size: at most 12", "name: required, give a value",
                        "seating: 'patio' is none of the options (answer with its number)",
                        "email: 'not-an-email' is not an email address"]
    assert parse_answer("1: 2.5\n2: A\n3: 1", FIELDS, locale="en") == ["party_size: '2.5' is not a whole number"]
    assert parse_answer("hello", FIELDS, locale="en") == [
        "cannot tell which field 'hello' is for: start each line with the field's number or name"]
    # in the conversation's language (the default: the demo's Chinese)
    assert parse_answer("1: 40\n3: patio\n4: not-an-email", FIELDS) == [
        "party_size：至多为 12", "name：必填，请给出取值", "seating：'patio' 不是任何一个选项（请回复选项编号）",
        "email：'not-an-email' 不是电子邮件地址"]
    assert parse_answer("1: x\n2: A\n3: 1", FIELDS) == ["party_size：'x' 不是数字"]


def test_decline_cancel_and_a_single_field_form() -> None:
    assert parse_answer("decline", FIELDS) == Answer("decline")
    assert parse_answer(" Cancel ", FIELDS) == Answer("cancel")
    one = fields_of({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]})
    assert parse_answer("no", one) == Answer("accept", {"ok": False})  # "no" answers a yes/no field
    assert parse_answer("1: yes", one) == Answer("accept", {"ok": True})
    titled = fields_of({"type": "object", "properties": {"c": {"type": "string", "oneOf": [
        {"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]}}})
    assert parse_answer("green", titled) == Answer("accept", {"c": "g"})


def test_schemas_outside_the_form_subset_are_named() -> None:
    with pytest.raises(UnsupportedSchema, match="field 'address': type 'object'"):
        fields_of({"type": "object", "properties": {"address": {"type": "object"}}})
    with pytest.raises(UnsupportedSchema, match="must list its options"):
        fields_of({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}})
    assert elicit_form.fields_of({"type": "object"}) == []


def test_a_server_request_belongs_to_the_sessions_one_call_or_the_one_it_names() -> None:
    calls = CallsInFlight()
    key = ("test.elicit", "default")
    assert calls.caller(key, None) == "the app asked outside any tool call"
    with calls.running(key, "book", ToolCallContext(run_id="r1"), call_id="c1", timeout=5) as first:
        assert calls.caller(key, None) is first
        with calls.running(key, "book", ToolCallContext(run_id="r2"), call_id="c2", timeout=5) as second:
            assert "2 calls are in flight" in str(calls.caller(key, None))
            assert calls.caller(key, {"progressToken": second.token}) is second
            assert calls.progressed(key, {"progressToken": first.token, "progress": 1, "total": 2, "message": "m"})
            assert not calls.progressed(key, {"progressToken": "someone-else", "progress": 1})
        assert [(p.progress, p.total, p.message) for p in first.progress] == [(1.0, 2.0, "m")]
    assert calls.caller(key, None) == "the app asked outside any tool call"
