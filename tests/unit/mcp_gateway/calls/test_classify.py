"""Classifying MCP results and failures into the wire statuses."""

from __future__ import annotations

import mcp_types as types
import msgspec
import pytest

from services.mcp_gateway.calls import classify


def test_a_plain_result_is_ok_with_content_and_structured() -> None:
    result = types.CallToolResult(content=[types.TextContent(type="text", text="晴")],
                                  structured_content={"temp": 1.0, "n": 2})
    classified = classify.from_mcp_result(result, 12.5, "read")
    assert classified.status == "ok" and classified.error is None
    assert classified.content == [{"type": "text", "text": "晴"}]
    assert classified.structured == {"temp": 1.0, "n": 2} and isinstance(classified.structured["temp"], float)
    assert classified.duration_ms == 12.5 and classified.side_effect == "read"


def test_is_error_is_a_tool_error_carrying_the_tools_text() -> None:
    result = types.CallToolResult(content=[types.TextContent(type="text", text="city not found")], is_error=True)
    classified = classify.from_mcp_result(result, 1.0, "write")
    assert classified.status == "tool_error"
    assert classified.error is not None and classified.error.code == "tool_error"
    assert classified.error.message == "city not found"
    assert classified.content == [{"type": "text", "text": "city not found"}]


def test_is_error_without_text_still_says_something() -> None:
    classified = classify.from_mcp_result(types.CallToolResult(content=[], is_error=True), 1.0, "read")
    assert classified.error is not None and classified.error.message == "the tool reported an error"


def test_content_blocks_other_than_text_are_kept() -> None:
    image = types.ImageContent(type="image", data="aGk=", mime_type="image/png")
    classified = classify.from_mcp_result(types.CallToolResult(content=[image]), 1.0, "read")
    assert classified.content == [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]
    assert classified.structured is None


def test_a_read_that_timed_out_is_a_timeout() -> None:
    classified = classify.timed_out(5000.0, "read", 5)
    assert classified.status == "timeout"
    assert classified.error is not None and classified.error.code == "timeout" and "5s" in classified.error.message


@pytest.mark.parametrize("side_effect", ["write", "dangerous"])
def test_a_write_that_timed_out_has_an_unknown_outcome(side_effect: str) -> None:
    classified = classify.timed_out(30000.0, side_effect, 30)  # type: ignore[arg-type]
    assert classified.status == "outcome_unknown"
    assert classified.error is not None and classified.error.code == "timeout"
    assert "may or may not have taken effect" in classified.error.message


def test_a_failure_carries_status_code_and_message() -> None:
    classified = classify.failed("unavailable", "app_unavailable", "app 'echo' went away", 3.0, "read")
    assert (classified.status, classified.error.code if classified.error else None) == (
        "unavailable", "app_unavailable")
    assert classified.content == [] and classified.side_effect == "read"


def test_an_app_gone_during_a_read_is_unavailable_during_a_write_unknown() -> None:
    read = classify.interrupted(5.0, "read", "app 'echo' went away during the call")
    assert read.status == "unavailable" and read.error is not None and read.error.code == "app_unavailable"
    for side_effect in ("write", "dangerous"):
        write = classify.interrupted(5.0, side_effect, "app 'echo' went away during the call")
        assert write.status == "outcome_unknown" and write.error is not None
        assert write.error.code == "app_went_away" and "may or may not have taken effect" in write.error.message


PLAIN_RESULTS = [
    {"content": [{"type": "text", "text": "晴"}]},
    {"content": [{"text": "two", "type": "text"}, {"type": "text", "text": ""}], "isError": False},
    {"content": [{"type": "text", "text": "city not found"}], "isError": True},
    {"content": []},
    {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"n": 2**70, "f": 1.0, "l": [None]}},
    {"content": [{"type": "text", "text": "x"}], "structuredContent": None, "isError": True},
    {"structuredContent": {}, "content": []},
]


@pytest.mark.parametrize("raw", PLAIN_RESULTS)
def test_a_plain_result_read_without_the_sdk_models_is_what_the_models_give(raw: dict) -> None:
    plain = classify.plain_result(raw)
    assert plain is not None
    modelled = types.CallToolResult.model_validate(raw, by_name=False)
    # Compared as JSON: equal dicts could still differ in a number's type (1 and 1.0).
    expected = msgspec.json.encode(classify.from_mcp_result(modelled, 3.0, "write"))
    assert msgspec.json.encode(classify.from_mcp_result(plain, 3.0, "write")) == expected


@pytest.mark.parametrize("raw", [
    {"content": [{"type": "image", "data": "aGk=", "mimeType": "image/png"}]},
    {"content": [{"type": "text", "text": "x", "annotations": {"priority": 1}}]},
    {"content": [{"type": "text", "text": 3}]},
    {"content": [{"type": "text"}]},
    {"content": ["text"]},
    {"content": [{"type": "text", "text": "x"}], "structuredContent": [1]},
    {"content": [{"type": "text", "text": "x"}], "_meta": {"k": "v"}},
    {"content": [{"type": "text", "text": "x"}], "isError": "yes"},
    {"content": {"type": "text", "text": "x"}},
    {"isError": False},
    {},
], ids=["image", "annotated", "text-not-a-string", "no-text", "block-not-an-object", "structured-not-an-object", "meta",
        "isError-not-a-bool", "content-not-a-list", "no-content", "empty"])
def test_anything_but_text_blocks_is_left_to_the_sdk_models(raw: dict) -> None:
    assert classify.plain_result(raw) is None
